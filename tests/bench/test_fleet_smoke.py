"""Smoke test of `python -m bench fleet`: two tiny workspaces, each alone then as a fleet, one
run; the result file has every figure the docs quote. No timing assertions. And the report's
arithmetic on made-up samples: ratios, the freshness formula, the targets' selection. Then
`python -m bench fleet-steady` on three tiny workspaces, and its leak count on a warehouse
tampered with by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench.fleet_leaks import TABLES, Ids, count_leaks, duckdb_query, warehouse_ids
from bench.fleet_report import check_fleet_targets, fleets, freshness, singles
from bench.fleet_steady import requests_over_budget

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


@pytest.mark.e2e
@pytest.mark.slow
def test_fleet_steady_tiny_smoke(tmp_path: Path) -> None:
    """Three tiny workspaces, every step: the whole tree's RSS holds the fleet's and the
    simulator's, every request arrived at the host and was counted against its budget, and
    every workspace's warehouse ids are its API's."""
    arguments = ["fleet-steady", "--scale", "tiny", "--workspaces", "3", "--latency-ms", "0"]
    arguments += ["--destination", "duckdb", "--parallel", "2", "--host-budget", "20"]
    document, printed = run_bench(arguments, tmp_path / "steady.json", timeout=900)
    assert [s["step"] for s in document["steps"]] == ["initial", "quiet", "changed"]
    for step in document["steps"]:
        assert step["exit_code"] == 0 and step["workspaces_ok"] == 3, step
        assert step["simulator_peak_rss_mb"] > 0 and step["server_peak_rss_mb"] is None
        assert step["tree_peak_rss_mb"] >= step["peak_rss_mb"] + step["simulator_peak_rss_mb"] / 2
        # each figure is rounded to 0.1 MB on its own, so their sum may fall 0.1 MB short
        bound = step["peak_rss_mb"] + step["simulator_peak_rss_mb"] + 0.15
        assert step["tree_peak_rss_mb"] <= bound, step
        # the host saw what the workspaces say they asked, nothing more (the walk came after)
        assert step["arrivals"] == step["requests"] > 0
        assert step["host_budget"] == 20 and step["requests_over_budget"] == 0
        assert 0 < step["peak_per_second"] <= 20 * 2 + 1
        assert step["ids_listed"] > 0 and step["workspaces_mismatched"] == 0, step
        assert step["rows_in_wrong_workspace"] == 0 and step["ids_missing"] == 0
    assert "mismatched 0 workspaces" in printed


def test_leaks_counted_where_a_schema_holds_another_workspaces_row(tmp_path: Path) -> None:
    """The warehouse read as the bench reads it (a DuckDB file of workspace schemas) against
    made-up API ids: a row copied from w02 into w01 and a current job retired are counted."""
    api: dict[str, Ids] = {
        "w01": {t: set() for t in TABLES} | {"projects": {"p1"}, "job_types": {"t0", "t1"}},
        "w02": {t: set() for t in TABLES} | {"projects": {"p2"}, "job_types": {"t0"}},
        "w03": {t: set() for t in TABLES} | {"jobs": {"j3"}},
    }
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as con:
        for name, ids in api.items():
            con.execute(f"CREATE SCHEMA drone_ops_{name}")
            for table, found in ids.items():
                if found:
                    con.execute(
                        f"CREATE TABLE drone_ops_{name}.{table} (id TEXT, _dlt_valid_to TEXT)"
                    )
                    con.executemany(
                        f"INSERT INTO drone_ops_{name}.{table} VALUES (?, NULL)",
                        [[i] for i in sorted(found)],
                    )
        con.execute("INSERT INTO drone_ops_w02.projects VALUES ('p0', '2030-01-01')")
    with duckdb_query(database) as query:
        clean = warehouse_ids(query, list(api))
    assert clean == api
    assert count_leaks(api, clean).as_row() | {"mismatch_examples": []} == {
        "workspaces_mismatched": 0,
        "rows_in_wrong_workspace": 0,
        "ids_missing": 0,
        "ids_extra": 0,
        "ids_listed": 6,
        "mismatch_examples": [],
    }
    with duckdb.connect(str(database)) as con:
        con.execute("INSERT INTO drone_ops_w01.projects VALUES ('p2', NULL)")
        con.execute("UPDATE drone_ops_w03.jobs SET _dlt_valid_to = '2030-01-01'")
    with duckdb_query(database) as query:
        leaks = count_leaks(api, warehouse_ids(query, list(api)))
    assert (leaks.workspaces_mismatched, leaks.rows_in_wrong_workspace) == (2, 1)
    assert (leaks.ids_missing, leaks.ids_extra) == (1, 1)
    assert leaks.examples == [
        "w01.projects: 0 missing [], 1 extra ['p2']",
        "w03.jobs: 1 missing ['j3'], 0 extra []",
    ]


def test_requests_over_budget_allow_one_late_second() -> None:
    assert requests_over_budget(41, 20.0) == 0
    assert requests_over_budget(45, 20.0) == 4
    assert requests_over_budget(10_000, None) is None
