"""`python -m bench http` runs every HTTP engine against the simulator and records each; the
urllib3 transport it measures turns urllib3's failures into the httpx errors our client
retries, so the client behaves alike on it. No timing assertions."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bench.http_cost import VARIANTS
from bench.urllib3_transport import Urllib3Transport
from drone_ops_sync.sources.drone_ops import DroneOpsClient
from drone_ops_sync.sources.drone_ops.exceptions import UnreachableError

from .command import run_bench


@pytest.mark.e2e
def test_http_cost_measures_every_engine(tmp_path: Path) -> None:
    arguments = ["http", "--requests", "40", "--rounds", "1"]
    document, printed = run_bench(arguments, tmp_path / "http.json", timeout=600)
    assert set(document["variants"]) == set(VARIANTS)
    for name, figures in document["variants"].items():
        assert figures["cpu_us"] > 0 and figures["wall_us"] > 0, name
    assert "ours_urllib3" in printed


def test_urllib3_transport_refused_connection_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = DroneOpsClient(
        f"http://127.0.0.1:{port}",
        "sk_test_unreachable",
        max_attempts=1,
        transport=Urllib3Transport(connect=2.0, read=2.0),
    )
    with client, pytest.raises(UnreachableError):
        client.get_json("/v1/projects")
