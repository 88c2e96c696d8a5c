"""`python -m bench fleet-steady`: a fleet as a schedule sees it, run after run on one warehouse.

`python -m bench fleet` measures fleets loading fresh warehouses beside each workspace alone;
a scheduled fleet mostly finds little or nothing to do. Here one fleet of N workspaces (one
simulator process, `--workspaces`) is synced into one warehouse per destination, in steps, each
one `drone-sync run` measured as a process tree (`fleet_process.py`):

1. `initial`: the first load (models off);
2. `quiet`: nothing changed in the API (models off: a quiet fleet builds none anyway);
3. `changed`: after `--change` of each workspace's projects and jobs were updated and a
   delivery added per webhook (models on, as a scheduled run builds them).

    python -m bench fleet-steady --workspaces 100 --destination duckdb,postgres --parallel 4
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testkit.postgres import PostgresUnavailable, create_database
from testkit.postgres import running_postgres as start_postgres

from .fleet import DESTINATIONS, FleetBench, drone_sync_command, simulators, workspace_name
from .fleet_process import cpu_seconds_of, measure_command
from .measurement import FleetOptions
from .report import write_result
from .runner import code_version

STEPS = ("initial", "quiet", "changed")


def parse_args(argv: Sequence[str] | None) -> tuple[FleetOptions, float]:
    p = argparse.ArgumentParser(
        prog="python -m bench fleet-steady", description=(__doc__ or "").splitlines()[0]
    )
    p.add_argument("--scale", choices=("tiny", "small"), default="small")
    p.add_argument("--workspaces", type=int, default=100)
    p.add_argument("--destination", default="duckdb", help="duckdb, postgres or both")
    p.add_argument("--parallel", type=int, default=4, help="the fleet's --parallel")
    p.add_argument("--latency-ms", type=int, default=50, help="added per /v1 request")
    p.add_argument("--change", type=float, default=0.01, help="fraction changed per workspace")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output", type=Path)
    a = p.parse_args(argv)
    destinations = [d.strip() for d in a.destination.split(",") if d.strip()]
    if not destinations or set(destinations) - set(DESTINATIONS):
        p.error(f"--destination: choose from {', '.join(DESTINATIONS)}")
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
    return options, a.change


def run_steady(options: FleetOptions, change: float) -> dict[str, Any]:
    """Every step on every destination; the result document."""
    size = options.workspaces[0]
    names = [workspace_name(i) for i in range(size)]
    root = Path(tempfile.mkdtemp(prefix="drone-bench-steady-"))
    steps: list[dict[str, Any]] = []
    try:
        with contextlib.ExitStack() as stack:
            postgres = None
            if "postgres" in options.destinations:
                postgres = stack.enter_context(start_postgres())
            sims = stack.enter_context(simulators(options, size))
            bench = FleetBench(options, sims, root, postgres)
            for destination in options.destinations:
                workdir = root / destination
                workdir.mkdir()
                database = ""
                command = [*drone_sync_command(), "run", "--log-format", "json"]
                command += ["--destination", destination, "--parallel", str(options.parallel)]
                if postgres is not None and destination == "postgres":
                    database = "steady"
                    create_database(postgres, database)
                else:
                    command += ["--database", str(workdir / "warehouse.duckdb")]
                env = bench.environment(names, workdir, database)
                for step in STEPS:
                    if step == "changed":
                        with ThreadPoolExecutor(8) as pool:
                            list(pool.map(lambda s: _change(s, change, options.seed), sims))
                    models = [] if step == "changed" else ["--no-models", "--no-snapshot"]
                    sim_before = cpu_seconds_of(sims[0].process.pid)
                    measured = measure_command([*command, *models], env, workdir)
                    summary = measured.summary()
                    runs = summary.get("workspaces") or {}
                    row = {
                        "destination": destination,
                        "step": step,
                        "workspaces": size,
                        "exit_code": measured.exit_code,
                        "wall_seconds": measured.wall_seconds,
                        "cpu_seconds": measured.cpu_seconds,
                        "cpu_per_workspace": round(measured.cpu_seconds / size, 3),
                        "peak_rss_mb": measured.peak_rss_mb,
                        "peak_pss_mb": measured.peak_pss_mb,
                        "processes": measured.processes,
                        "simulator_cpu_seconds": round(
                            cpu_seconds_of(sims[0].process.pid) - sim_before, 2
                        ),
                        "workspaces_ok": sum(1 for r in runs.values() if r["exit_code"] == 0),
                        "workers": len({r.get("worker") for r in runs.values()}),
                        "rows_written": sum(r.get("rows_written") or 0 for r in runs.values()),
                        "requests": sum(r.get("requests") or 0 for r in runs.values()),
                        "models_seconds": (summary.get("models") or {}).get("seconds"),
                        "error": summary.get("error"),
                        "causes": sorted(
                            {str(r.get("error")) for r in runs.values() if r["exit_code"] != 0}
                        ),
                    }
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
        "change": change,
        "code": code_version(),
        "steps": steps,
    }


def _change(sim: Any, fraction: float, seed: int) -> None:
    """The same change on every invocation: each workspace's churn is seeded."""
    sim.churn(
        seed=seed, update_fraction=fraction, delete_fraction=0.0, new_deliveries_per_webhook=1
    )


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['destination']:<8} {row['step']:<8} {row['workspaces']:>4} workspaces"
        f" {row['wall_seconds']:8.1f} s  CPU {row['cpu_seconds']:7.1f} s"
        f" ({row['cpu_per_workspace']:.3f} s each)  peak RSS {row['peak_rss_mb']:6.0f} MB"
        f"  simulator {row['simulator_cpu_seconds']:6.1f} s  {row['workspaces_ok']} ok"
        f"  {row['workers']} workers  {row['rows_written']} rows  {row['requests']} requests"
        f"  exit {row['exit_code']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    options, change = parse_args(argv)
    output = options.output or Path("bench/results") / (
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-fleet-steady-{options.workspaces[0]}"
        f"-{options.latency_ms}ms.json"
    )
    try:
        document = run_steady(options, change)
    except PostgresUnavailable as exc:
        print(f"cannot run the fleet on postgres: {exc}", file=sys.stderr)
        return 2
    return write_result(output, document, "\n".join(_line(r) for r in document["steps"]))
