"""Smoke test of `python -m bench fleet`: two tiny workspaces, each alone then as a fleet, one
run; the result file has every figure the docs quote. No timing assertions. And the report's
arithmetic on made-up samples: ratios, the freshness formula, the targets' selection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.fleet_report import check_fleet_targets, fleets, freshness, singles

from .command import run_bench


@pytest.mark.e2e
@pytest.mark.slow
def test_fleet_bench_tiny_smoke(tmp_path: Path) -> None:
    arguments = ["fleet", "--scale", "tiny", "--workspaces", "2", "--destination", "duckdb"]
    arguments += ["--parallel", "2", "--runs", "1"]
    document, printed = run_bench(arguments, tmp_path / "fleet.json", timeout=600)
    assert document["benchmark"] == "fleet"
    assert set(document["singles"]["duckdb"]) == {"w01", "w02"}
    for single in document["singles"]["duckdb"].values():
        assert single["wall_seconds"] > 0 and single["peak_rss_mb"] > 0 and single["requests"] > 0
    (fleet,) = document["fleets"]
    assert (fleet["workspaces"], fleet["parallel"], fleet["runs"]) == (2, 2, 1)
    for key in (
        "wall_seconds",
        "cpu_seconds",
        "peak_rss_mb",
        "peak_pss_mb",
        "slowest_single_seconds",
        "sum_of_singles_seconds",
        "wall_vs_slowest_single",
        "wall_vs_sum_of_singles",
        "cpu_per_workspace_ratio",
        "simulators_cpu_seconds",
        "coordinator_rss_mb",
    ):
        assert fleet[key] is not None and fleet[key] >= 0, key
    # the fleet fetched what the two workspaces fetched alone, and both workspaces ran in it
    assert fleet["requests"] == fleet["singles_requests"]
    fleet_sample = next(s for s in document["samples"] if s["kind"] == "fleet")
    assert set(fleet_sample["workspace_seconds"]) == {"w01", "w02"}
    assert fleet_sample["processes"] >= 2
    assert document["freshness"]["duckdb"]["workspaces_per_schedule"] >= 1
    assert {t["target"].split(": ")[1] for t in document["targets"]} == {
        "CPU per workspace, fleet / single",
        "peak RSS of the whole fleet (MB)",
    }
    assert "fleets (drone-sync run" in printed


def _sample(kind: str, names: list[str], wall: float, cpu: float, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "destination": "postgres",
        "workspaces": names,
        "size": len(names),
        "parallel": extra.get("parallel", 1),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "peak_rss_mb": 100.0 * len(names),
        "peak_pss_mb": 80.0 * len(names),
        "largest_process_rss_mb": 100.0,
        "root_peak_rss_mb": 100.0,
        "root_cpu_seconds": 1.0,
        "simulators_cpu_seconds": 0.5,
        "server_cpu_seconds": 0.2,
        "requests": 10 * len(names),
    }


def test_report_ratios_freshness_and_targets() -> None:
    names = ["w01", "w02", "w03", "w04"]
    samples = [_sample("single", [n], 10.0 + i, 4.0) for i, n in enumerate(names)]
    samples.append(_sample("fleet", names, 19.5, 17.6, parallel=4))
    rows = fleets(samples, singles(samples))
    (row,) = rows
    assert row["slowest_single_seconds"] == 13.0
    assert row["sum_of_singles_seconds"] == 46.0
    assert row["wall_vs_slowest_single"] == 1.5
    assert row["cpu_per_workspace_ratio"] == 1.1
    # 4 workspaces per 19.5 s of wall: floor(900 x 4 / 19.5) = 184
    assert freshness(rows)["postgres"]["workspaces_per_schedule"] == 184
    checks = {c["target"].split(": ")[1]: c["met"] for c in check_fleet_targets("tenth", rows)}
    assert checks == {
        "wall / slowest single": True,
        "CPU per workspace, fleet / single": True,
        "peak RSS of the whole fleet (MB)": True,
    }
