"""`python -m bench http` runs every HTTP engine against the simulator and records each, or says
why one was left out (the aiohttp rows need a package the project does not depend on). No
timing assertions. The transport itself is tested in tests/sources/test_transport.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.http_cost import NEEDS_AIOHTTP, VARIANTS

from .command import run_bench


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_http_cost_measures_every_engine(tmp_path: Path) -> None:
    arguments = ["http", "--requests", "40", "--rounds", "1"]
    document, printed = run_bench(arguments, tmp_path / "http.json", timeout=110)
    measured, left_out = set(document["variants"]), set(document["left_out"])
    assert measured | left_out == set(VARIANTS) and not measured & left_out
    assert left_out <= set(NEEDS_AIOHTTP)
    for name, figures in document["variants"].items():
        assert figures["cpu_us"] > 0 and figures["wall_us"] > 0, name
    assert "ours_httpcore" in printed
