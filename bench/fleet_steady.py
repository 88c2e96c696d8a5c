"""`python -m bench fleet-steady`: a fleet as a schedule sees it, run after run on one warehouse.

`python -m bench fleet` measures fleets loading fresh warehouses beside each workspace alone;
a scheduled fleet mostly finds little or nothing to do. Here one fleet of N workspaces (one
simulator process, `--workspaces`) is synced into one warehouse per destination, in steps, each
one `drone-sync run` measured as a process tree (`fleet_process.py`):

1. `initial`: the first load (models off);
2. `quiet`: nothing changed in the API (models off: a quiet fleet builds none anyway);
3. `changed`: after `--change` of each workspace's projects and jobs were updated and a
   delivery added per webhook (models on, as a scheduled run builds them).

Each step also counts what issue 39's targets ask beside time: the peak RSS of the whole tree
(the fleet, the simulator and, on PostgreSQL, the server, sampled together); the requests that
arrived at the API host within any one second against the host budget the fleet was given
(`--host-budget`); and, after the step and outside its time, every workspace's current ids in
the warehouse against its own API's (`fleet_leaks.py`; `--no-verify` skips it).

    python -m bench fleet-steady --workspaces 100 --destination duckdb,postgres --parallel 4
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from testkit.postgres import PostgresUnavailable, RunningPostgres, create_database
from testkit.postgres import running_postgres as start_postgres
from testkit.simulator_process import SimulatorHandle

from .fleet import DESTINATIONS, FleetBench, drone_sync_command, simulators, workspace_name
from .fleet_leaks import count_leaks, duckdb_query, fleet_api_ids, postgres_query, warehouse_ids
from .fleet_process import Measured, cpu_seconds_of, measure_command
from .measurement import FleetOptions
from .report import write_result
from .runner import code_version

STEPS = ("initial", "quiet", "changed")
BUDGET_SETTING = "SOURCES__DRONE_OPS__MAX_REQUESTS_PER_SECOND_PER_HOST"
DEFAULT_HOST_BUDGET = 400.0
LATE_SECONDS = 1.0
"""How late a request may arrive after the slot the budget reserved for it (a busy machine's
scheduling), as `tests/pipelines/test_fleet_e2e.py` allows: within one second, arrivals may
exceed the budget by this many seconds' worth, and one more."""


@dataclass
class SteadyOptions:
    """What fleet-steady adds to a fleet's options."""

    change: float = 0.01
    host_budget: float | None = DEFAULT_HOST_BUDGET
    """Requests per second for the whole API host; None: the fleet runs unbudgeted."""
    verify: bool = True


def parse_args(argv: Sequence[str] | None) -> tuple[FleetOptions, SteadyOptions]:
    p = argparse.ArgumentParser(
        prog="python -m bench fleet-steady", description=(__doc__ or "").splitlines()[0]
    )
    p.add_argument("--scale", choices=("tiny", "small"), default="small")
    p.add_argument("--workspaces", type=int, default=100)
    p.add_argument("--destination", default="duckdb", help="duckdb, postgres or both")
    p.add_argument("--parallel", type=int, default=4, help="the fleet's --parallel")
    p.add_argument("--latency-ms", type=int, default=50, help="added per /v1 request")
    p.add_argument("--change", type=float, default=0.01, help="fraction changed per workspace")
    p.add_argument(
        "--host-budget",
        type=float,
        default=DEFAULT_HOST_BUDGET,
        help="requests per second for the API host, shared by the fleet's workers; 0: none",
    )
    p.add_argument(
        "--no-verify", action="store_true", help="skip comparing each workspace with its API"
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output", type=Path)
    a = p.parse_args(argv)
    destinations = [d.strip() for d in a.destination.split(",") if d.strip()]
    if not destinations or set(destinations) - set(DESTINATIONS):
        p.error(f"--destination: choose from {', '.join(DESTINATIONS)}")
    if a.host_budget < 0:
        p.error("--host-budget: requests per second, 0 for none")
    options = FleetOptions(
        scale=a.scale,
        workspaces=[a.workspaces],
        destinations=destinations,
        parallel=max(1, a.parallel),
        runs=1,
        latency_ms=a.latency_ms,
        seed=a.seed,
        output=a.output,
    )
    steady = SteadyOptions(
        change=a.change, host_budget=a.host_budget or None, verify=not a.no_verify
    )
    return options, steady


def requests_over_budget(peak: int, budget: float | None) -> int | None:
    """Requests within the busiest second beyond the budget and what late scheduling may
    bunch into it; None without a budget."""
    if budget is None:
        return None
    return max(0, int(peak - budget * (1 + LATE_SECONDS) - 1))


class SteadyFleet:
    """One fleet's steps on one warehouse per destination, against one simulator process."""

    def __init__(
        self,
        options: FleetOptions,
        steady: SteadyOptions,
        sims: Sequence[SimulatorHandle],
        root: Path,
        postgres: RunningPostgres | None,
    ) -> None:
        self.options = options
        self.steady = steady
        self.sims = sims
        self.root = root
        self.postgres = postgres
        self.names = [workspace_name(i) for i in range(len(sims))]
        self.host = sims[0].base_url.split("/w/")[0]
        self.bench = FleetBench(options, sims, root, postgres)

    def run(self, destination: str) -> Iterator[dict[str, Any]]:
        """Every step on one destination, a row each as it ends."""
        workdir = self.root / destination
        workdir.mkdir()
        database = ""
        command = [*drone_sync_command(), "run", "--log-format", "json"]
        command += ["--destination", destination, "--parallel", str(self.options.parallel)]
        beside = {"simulator": self.sims[0].process.pid}
        if self.postgres is not None and destination == "postgres":
            database = "steady"
            create_database(self.postgres, database)
            beside["server"] = self.postgres.process.pid
        else:
            command += ["--database", str(workdir / "warehouse.duckdb")]
        env = self.bench.environment(self.names, workdir, database)
        if self.steady.host_budget is not None:
            env[BUDGET_SETTING] = str(self.steady.host_budget)
        for step in STEPS:
            if step == "changed":
                with ThreadPoolExecutor(8) as pool:
                    list(pool.map(self._change, self.sims))
            models = [] if step == "changed" else ["--no-models", "--no-snapshot"]
            self._reset_arrivals()
            sim_before = cpu_seconds_of(self.sims[0].process.pid)
            measured = measure_command([*command, *models], env, workdir, beside=beside)
            sim_cpu = cpu_seconds_of(self.sims[0].process.pid) - sim_before
            row = self._row(destination, step, measured, sim_cpu)
            row.update(self._arrivals())
            if self.steady.verify:
                row.update(self._verify(destination, workdir, database))
            yield row

    def _row(
        self, destination: str, step: str, measured: Measured, sim_cpu: float
    ) -> dict[str, Any]:
        size = len(self.names)
        summary = measured.summary()
        runs = summary.get("workspaces") or {}
        return {
            "destination": destination,
            "step": step,
            "workspaces": size,
            "exit_code": measured.exit_code,
            "wall_seconds": measured.wall_seconds,
            "cpu_seconds": measured.cpu_seconds,
            "cpu_per_workspace": round(measured.cpu_seconds / size, 3),
            "peak_rss_mb": measured.peak_rss_mb,
            "peak_pss_mb": measured.peak_pss_mb,
            "tree_peak_rss_mb": measured.tree_peak_rss_mb,
            "tree_peak_pss_mb": measured.tree_peak_pss_mb,
            "simulator_peak_rss_mb": measured.beside_peak_rss_mb.get("simulator"),
            "server_peak_rss_mb": measured.beside_peak_rss_mb.get("server"),
            "processes": measured.processes,
            "simulator_cpu_seconds": round(sim_cpu, 2),
            "workspaces_ok": sum(1 for r in runs.values() if r["exit_code"] == 0),
            "workers": len({r.get("worker") for r in runs.values()}),
            "rows_written": sum(r.get("rows_written") or 0 for r in runs.values()),
            "requests": sum(r.get("requests") or 0 for r in runs.values()),
            "models_seconds": (summary.get("models") or {}).get("seconds"),
            "error": summary.get("error"),
            "causes": sorted({str(r.get("error")) for r in runs.values() if r["exit_code"] != 0}),
        }

    def _reset_arrivals(self) -> None:
        httpx.post(f"{self.host}/_host/arrivals/reset", timeout=30).raise_for_status()

    def _arrivals(self) -> dict[str, Any]:
        """The step's arrivals at the API host: read before anything else asks the API."""
        response = httpx.get(f"{self.host}/_host/arrivals", params={"window": 1}, timeout=60)
        arrivals = response.raise_for_status().json()
        budget = self.steady.host_budget
        return {
            "host_budget": budget,
            "arrivals": arrivals["total"],
            "peak_per_second": arrivals["peak"],
            "requests_over_budget": requests_over_budget(arrivals["peak"], budget),
        }

    def _verify(self, destination: str, workdir: Path, database: str) -> dict[str, Any]:
        """Every workspace's current ids against its API's, outside the measured time."""
        started = time.monotonic()
        handles = dict(zip(self.names, self.sims, strict=True))
        api = fleet_api_ids(handles)
        if destination == "postgres":
            assert self.postgres is not None
            reader = postgres_query(self.postgres.dsn(database))
        else:
            reader = duckdb_query(workdir / "warehouse.duckdb")
        with reader as query:
            stored = warehouse_ids(query, self.names)
        leaks = count_leaks(api, stored).as_row()
        return leaks | {"verify_seconds": round(time.monotonic() - started, 1)}

    def _change(self, sim: SimulatorHandle) -> None:
        """The same change on every invocation: each workspace's churn is seeded."""
        sim.churn(
            seed=self.options.seed,
            update_fraction=self.steady.change,
            delete_fraction=0.0,
            new_deliveries_per_webhook=1,
        )


def run_steady(options: FleetOptions, steady: SteadyOptions) -> dict[str, Any]:
    """Every step on every destination; the result document."""
    size = options.workspaces[0]
    root = Path(tempfile.mkdtemp(prefix="drone-bench-steady-"))
    steps: list[dict[str, Any]] = []
    try:
        with contextlib.ExitStack() as stack:
            postgres = None
            if "postgres" in options.destinations:
                postgres = stack.enter_context(start_postgres())
            sims = stack.enter_context(simulators(options, size))
            fleet = SteadyFleet(options, steady, sims, root, postgres)
            for destination in options.destinations:
                for row in fleet.run(destination):
                    steps.append(row)
                    print(_line(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "benchmark": "fleet-steady",
        "scale": options.scale,
        "workspaces": size,
        "parallel": options.parallel,
        "latency_ms": options.latency_ms,
        "change": steady.change,
        "host_budget": steady.host_budget,
        "code": code_version(),
        "steps": steps,
    }


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _line(row: dict[str, Any]) -> str:
    over = row["requests_over_budget"]
    budget = "none" if row["host_budget"] is None else f"{row['host_budget']:g}/s"
    line = (
        f"{row['destination']:<8} {row['step']:<8} {row['workspaces']:>4} workspaces"
        f" {row['wall_seconds']:8.1f} s  CPU {row['cpu_seconds']:7.1f} s"
        f" ({row['cpu_per_workspace']:.3f} s each)  peak RSS {_mb(row['peak_rss_mb'])} MB"
        f" (tree {_mb(row['tree_peak_rss_mb'])} MB, PSS {_mb(row['tree_peak_pss_mb'])}: simulator"
        f" {_mb(row['simulator_peak_rss_mb'])}, server {_mb(row['server_peak_rss_mb'])})"
        f"  simulator {row['simulator_cpu_seconds']:6.1f} s  {row['workspaces_ok']} ok"
        f"  {row['workers']} workers  {row['rows_written']} rows  {row['requests']} requests"
        f"  (arrived {row['arrivals']}, at most {row['peak_per_second']} in 1 s; budget"
        f" {budget}, over {'-' if over is None else over})"
    )
    if "workspaces_mismatched" in row:
        line += (
            f"  mismatched {row['workspaces_mismatched']} workspaces,"
            f" {row['rows_in_wrong_workspace']} rows in the wrong one"
        )
    return line + f"  exit {row['exit_code']}"


def main(argv: Sequence[str] | None = None) -> int:
    options, steady = parse_args(argv)
    output = options.output or Path("bench/results") / (
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-fleet-steady-{options.workspaces[0]}"
        f"-{options.latency_ms}ms.json"
    )
    try:
        document = run_steady(options, steady)
    except PostgresUnavailable as exc:
        print(f"cannot run the fleet on postgres: {exc}", file=sys.stderr)
        return 2
    return write_result(output, document, "\n".join(_line(r) for r in document["steps"]))
