"""`python -m bench http` runs every HTTP engine against the simulator and records each; the
urllib3 transport it measures turns urllib3's failures into the httpx errors our client
retries, so the client behaves alike on it. No timing assertions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.http_cost import VARIANTS
from bench.urllib3_transport import Urllib3Transport
from sources.drone_ops import DroneOpsClient
from sources.drone_ops.exceptions import UnreachableError

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_http_cost_measures_every_engine(tmp_path: Path) -> None:
    output = tmp_path / "http.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    arguments = ["--requests", "40", "--rounds", "1", "--output", str(output)]
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "http", *arguments],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    document = json.loads(output.read_text())
    assert set(document["variants"]) == set(VARIANTS)
    for name, figures in document["variants"].items():
        assert figures["cpu_us"] > 0 and figures["wall_us"] > 0, name
    assert "ours_urllib3" in completed.stdout


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
