"""A fleet through the command line: three workspaces with different seeds (whose predefined job
types share ids), served by one simulator process at three base URLs, as the workspaces
`default`, `acme` and `zen` of one DuckDB file.

What is checked: every workspace's tables equal its own API after an initial and a churned
run; the walks of different workspaces overlap in time; a workspace whose key is refused fails
alone (its line names the cause, the others load, the models are built over them) and the next
run heals it; the marts hold every workspace.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import (
    EXIT_FAILED,
    EXIT_OK,
    TRACEBACK,
    Background,
    Result,
    cli_env,
    run_cli,
    wait_until,
)
from .warehouse_check import api_snapshot, current_rows, mismatches, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAMES = ("default", "acme", "zen")
SEED = 11
"""Workspace n of the simulator is seeded with SEED + n."""


@pytest.fixture(scope="module")
def simulators() -> Iterator[dict[str, SimulatorHandle]]:
    """One simulator process serving the three workspaces, each at its own base URL and keys."""
    extra = ["--workspaces", str(len(NAMES))]
    with running_simulator(seed=SEED, scale="tiny", admin=True, extra_args=extra) as sim:
        yield {name: sim.workspace(n) for n, name in enumerate(NAMES)}


def _env(
    tmp_path: Path, sims: dict[str, SimulatorHandle], zen_key: str, **settings: str
) -> dict[str, str]:
    named = {name: {"base_url": sims[name].base_url} for name in NAMES[1:]}
    return cli_env(
        tmp_path,
        base_url=sims["default"].base_url,
        api_key=sims["default"].read_key,
        settings={
            "WORKSPACES": json.dumps(named),
            "WORKSPACES__ACME__API_KEY": sims["acme"].read_key,
            "WORKSPACES__ZEN__API_KEY": zen_key,
            **settings,
        },
    )


def _run(tmp_path: Path, env: dict[str, str], *options: str) -> tuple[Result, dict[str, Any]]:
    database = tmp_path / "fleet.duckdb"
    args = ["run", "--database", str(database), "--log-format", "json", *options]
    result = run_cli(args, env, tmp_path, timeout=300)
    assert TRACEBACK not in result.text, result.describe()
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    summary = next(event for event in events if event["event"] == "summary")
    return result, summary


def _assert_equal_to_api(database: Path, name: str, sim: SimulatorHandle) -> None:
    dataset = "drone_ops" if name == "default" else f"drone_ops_{name}"
    for table, records in api_snapshot(sim.base_url, sim.read_key).items():
        problems = mismatches(records, current_rows(database, table, dataset))
        assert not problems, f"{name}.{table}: {problems[:3]}"


def test_a_fleet_syncs_each_workspace_apart_and_heals_a_failed_one(
    tmp_path: Path, simulators: dict[str, SimulatorHandle]
) -> None:
    database = tmp_path / "fleet.duckdb"
    env = _env(tmp_path, simulators, simulators["zen"].read_key)

    result, summary = _run(tmp_path, env)
    assert result.code == EXIT_OK, result.describe()
    assert set(summary["workspaces"]) == set(NAMES)
    per_workspace = [run["rows_written"] for run in summary["workspaces"].values()]
    assert summary["rows_written"] == sum(per_workspace) and all(per_workspace), summary
    for name, sim in simulators.items():
        _assert_equal_to_api(database, name, sim)
    shared = {row["id"] for row in query(database, "SELECT id FROM drone_ops.job_types")} & {
        row["id"] for row in query(database, "SELECT id FROM drone_ops_acme.job_types")
    }
    assert shared, "the fixture's workspaces share no id: the test would prove nothing"

    # the walks overlap: each workspace's run interval meets another's
    runs = {
        name: query(
            database,
            f"SELECT min(started_at) AS s, max(finished_at) AS f FROM"
            f" {'drone_ops' if name == 'default' else f'drone_ops_{name}'}._sync_runs",
        )[0]
        for name in NAMES
    }
    assert any(
        runs[a]["s"] < runs[b]["f"] and runs[b]["s"] < runs[a]["f"]
        for a in NAMES
        for b in NAMES
        if a < b
    ), runs

    marts = query(
        database,
        "SELECT workspace, count(*) AS n FROM drone_ops_marts.dim_projects GROUP BY workspace",
    )
    assert {row["workspace"] for row in marts} == set(NAMES)

    for sim in simulators.values():
        sim.churn()
    # runs whose models nothing reads build none: the refused run below builds what changed
    result, _ = _run(tmp_path, env, "--no-models")
    assert result.code == EXIT_OK, result.describe()
    for name, sim in simulators.items():
        _assert_equal_to_api(database, name, sim)

    # zen's key is refused: zen fails alone, with its cause; the others still load
    simulators["acme"].churn()
    refused = _env(tmp_path, simulators, "not-a-key")
    result, summary = _run(tmp_path, refused)
    assert result.code == EXIT_FAILED, result.describe()
    assert summary["workspaces"]["zen"]["exit_code"] != EXIT_OK
    assert "401" in (summary["workspaces"]["zen"]["error"] or ""), summary["workspaces"]["zen"]
    assert "not-a-key" not in result.text
    assert summary["workspaces"]["acme"]["exit_code"] == EXIT_OK
    assert "zen" in summary["error"]
    _assert_equal_to_api(database, "acme", simulators["acme"])
    assert summary["models"] is not None and summary["models"]["ok"], summary["models"]

    # the next run with the key fixed heals it
    simulators["zen"].churn()
    result, summary = _run(tmp_path, env, "--no-models")
    assert result.code == EXIT_OK, result.describe()
    _assert_equal_to_api(database, "zen", simulators["zen"])
    statuses = query(
        database,
        "SELECT DISTINCT workspace, status FROM drone_ops_zen._sync_runs ORDER BY status",
    )
    assert {(row["workspace"], row["status"]) for row in statuses} >= {("zen", "success")}


def _workers_of(fleet_pid: int) -> list[int]:
    """The fleet's worker processes (its children running `pipelines.run.worker`)."""
    children = Path(f"/proc/{fleet_pid}/task/{fleet_pid}/children")
    pids = [int(pid) for pid in children.read_text().split()] if children.exists() else []
    return [
        pid for pid in pids if b"pipelines.run.worker" in _read_bytes(Path(f"/proc/{pid}/cmdline"))
    ]


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_one_worker_runs_workspaces_in_turn_and_a_dead_worker_fails_only_its_workspace(
    tmp_path: Path, simulators: dict[str, SimulatorHandle]
) -> None:
    """`--parallel 1`: one worker takes the workspaces in turn. Killed while it holds
    `default`'s walk (the simulator's gate keeps it there), it fails `default` alone; a new
    worker runs the other two, one after the other, and the next run heals `default`."""
    env = _env(tmp_path, simulators, simulators["zen"].read_key)
    database = tmp_path / "fleet.duckdb"
    args = ["run", "--database", str(database), "--log-format", "json", "--parallel", "1"]
    args.append("--no-models")
    gate = simulators["default"]
    gate.set_gate(True)
    fleet = Background(args, env, tmp_path, tmp_path / "logs", "fleet")
    try:
        assert wait_until(lambda: gate.gate()["held"] > 0 or not fleet.running(), 120)
        workers = _workers_of(fleet.pid)
        assert fleet.running() and len(workers) == 1, fleet.wait(timeout=5).describe()
        os.kill(workers[0], signal.SIGKILL)
        gate.set_gate(False)
        result = fleet.wait(timeout=300)
    finally:
        gate.set_gate(False)
        fleet.stop()
    assert TRACEBACK not in result.text, result.describe()
    assert result.code == EXIT_FAILED, result.describe()
    summary = next(
        event
        for event in map(json.loads, filter(None, result.out.splitlines()))
        if event["event"] == "summary"
    )
    runs = summary["workspaces"]
    assert runs["default"]["exit_code"] == 128 + signal.SIGKILL, runs["default"]
    assert runs["default"]["worker"] == workers[0]
    assert runs["acme"]["exit_code"] == runs["zen"]["exit_code"] == EXIT_OK, runs
    assert runs["acme"]["worker"] == runs["zen"]["worker"] != workers[0], runs
    for name in ("acme", "zen"):
        _assert_equal_to_api(database, name, simulators[name])

    result, summary = _run(tmp_path, env, "--no-models")
    assert result.code == EXIT_OK, result.describe()
    _assert_equal_to_api(database, "default", simulators["default"])


BUDGET = 5.0
"""An API host's budget, requests per second, small enough that a tiny fleet's requests span
several seconds (without it, 21 of its 33 arrived within one second)."""
LATE_SECONDS = 1.0
"""How late a request may arrive after its reserved slot (a busy machine's scheduling):
arrivals may bunch by this much, never more."""


def test_workers_of_a_fleet_share_one_api_hosts_budget(tmp_path: Path) -> None:
    """Three workspaces of one simulator (one API host) synced at once by three workers under
    `max_requests_per_second_per_host`: the most requests that arrived within any second is the
    budget plus what a late scheduler can bunch, counted where they arrive."""
    extra = ["--workspaces", str(len(NAMES))]
    with running_simulator(seed=5, scale="tiny", admin=True, extra_args=extra) as sim:
        sims = {name: sim.workspace(n) for n, name in enumerate(NAMES)}
        env = _env(tmp_path, sims, sims["zen"].read_key, MAX_REQUESTS_PER_SECOND_PER_HOST="5")
        args = ["run", "--database", str(tmp_path / "w.duckdb"), "--parallel", "3"]
        result = run_cli([*args, "--no-models"], env, tmp_path, timeout=300)
        assert result.code == EXIT_OK and TRACEBACK not in result.text, result.describe()
        host = sim.base_url.split("/w/")[0]
        one_second = httpx.get(f"{host}/_host/arrivals", params={"window": 1}).json()
    assert one_second["total"] >= 3 * BUDGET, f"too few requests to show a budget: {one_second}"
    # slots are 1/BUDGET apart; only a late arrival can bring two closer
    assert one_second["peak"] <= BUDGET * (1 + LATE_SECONDS) + 1, one_second
