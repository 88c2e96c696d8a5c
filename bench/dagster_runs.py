"""`python -m bench.dagster_runs`: a fleet's syncs through Dagster, a run per workspace against
a run per batch of workspaces, on one warehouse each.

Each run is a process of its own, as Dagster's run launcher starts one: it loads the code
location (`build_definitions`, the dbt manifest included) and executes the sync job for its
partition or partition range. At most `--concurrent` runs at once (the instance's
`max_concurrent_runs`). Both layouts sync the same N workspaces of one simulator process, first
into an empty warehouse (`initial`), then again with nothing changed (`quiet`); wall time, the
CPU of every run process and the largest run's peak RSS.

    python -m bench.dagster_runs --workspaces 8 --scale tiny --latency-ms 0
    python -m bench.dagster_runs --workspaces 500 --layouts per_batch --destination postgres
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from testkit.postgres import create_database, running_postgres
from testkit.simulator_process import running_simulator

from .runner import POSTGRES_CREDENTIALS_ENV, REPO_ROOT, code_version, simulator_scale

LAYOUTS = {"per_workspace": 1, "per_batch": 25}
"""Workspaces per run at most: a run each, or the schedule's batches."""
DESTINATION_ENV = "BENCH_DAGSTER_DESTINATION"
"""Tells a run's process which destination its code location's warehouse resource names."""


def _child(argv: list[str]) -> int:
    """One run: `--child <first> <last>` syncs that partition range (one key when equal)."""
    import dagster as dg
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    from drone_ops_sync.orchestration.automation import SYNC_JOB_NAME
    from drone_ops_sync.orchestration.definitions import build_definitions
    from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse

    first, last = argv
    warehouse = DroneSyncWarehouse(destination=os.environ.get(DESTINATION_ENV, "duckdb"))
    job = build_definitions(warehouse=warehouse).resolve_job_def(SYNC_JOB_NAME)
    with dg.DagsterInstance.get() as instance:
        if first == last:
            result = job.execute_in_process(
                instance=instance, partition_key=first, raise_on_error=False
            )
        else:
            tags = {ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last}
            result = job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    return 0 if result.success else 1


def _run_all(batches: list[list[str]], env: dict[str, str], concurrent: int) -> dict[str, Any]:
    def one(batch: list[str]) -> int:
        args = [sys.executable, "-m", "bench.dagster_runs", "--child", batch[0], batch[-1]]
        return subprocess.run(args, env=env, cwd=REPO_ROOT, check=False).returncode

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with ThreadPoolExecutor(concurrent) as pool:
        codes = list(pool.map(one, batches))
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "runs": len(batches),
        "failed_runs": sum(1 for code in codes if code),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "largest_run_peak_rss_mb": round(after.ru_maxrss / 1024),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        return _child(args[1:])
    p = argparse.ArgumentParser(prog="python -m bench.dagster_runs")
    p.add_argument("--workspaces", type=int, default=40)
    p.add_argument("--scale", choices=("tiny", "small"), default="small")
    p.add_argument("--latency-ms", type=int, default=50)
    p.add_argument("--concurrent", type=int, default=4)
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="per_workspace, per_batch or both")
    p.add_argument("--destination", choices=("duckdb", "postgres"), default="duckdb")
    p.add_argument("--output", type=Path, default=REPO_ROOT / "bench/results/dagster-runs.json")
    a = p.parse_args(args)
    from drone_ops_sync.orchestration.automation import batches

    names = [f"w{n:04d}" for n in range(a.workspaces)]
    scale, extra = simulator_scale(a.scale)
    extra = [*extra, "--workspaces", str(a.workspaces), "--latency-ms", str(a.latency_ms)]
    layouts = {name: LAYOUTS[name] for name in a.layouts.split(",")}
    results: dict[str, Any] = {}
    with (
        running_simulator(seed=42, scale=scale, admin=True, extra_args=extra) as sim,
        tempfile.TemporaryDirectory(prefix="bench-dagster-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        postgres = stack.enter_context(running_postgres()) if a.destination == "postgres" else None
        for layout, per_run in layouts.items():
            folder = Path(tmp) / layout
            (folder / "dagster").mkdir(parents=True)
            (folder / "dagster/dagster.yaml").write_text("telemetry:\n  enabled: false\n")
            env = _environment(sim, names, folder)
            if postgres is not None:
                create_database(postgres, layout)
                env[POSTGRES_CREDENTIALS_ENV] = postgres.dsn(layout)
                env[DESTINATION_ENV] = "postgres"
            cut = batches(names, per_run, a.concurrent)
            # the instance's storage made once, as `dagster dev` or a daemon makes it before any
            # run: runs starting together on a new DAGSTER_HOME race to create its SQLite
            # schema and break it (alembic_version twice)
            init = "import dagster as dg\nwith dg.DagsterInstance.get() as i: i.get_runs(limit=1)"
            subprocess.run([sys.executable, "-c", init], env=env, cwd=REPO_ROOT, check=True)
            for step in ("initial", "quiet"):
                results[f"{layout}/{step}"] = measured = _run_all(cut, env, a.concurrent)
                print(f"{layout:14} {step:8} {json.dumps(measured)}", file=sys.stderr)
    document = {
        "code": code_version(),
        "workspaces": a.workspaces,
        "scale": a.scale,
        "latency_ms": a.latency_ms,
        "concurrent": a.concurrent,
        "destination": a.destination,
        "results": results,
    }
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(json.dumps(document, indent=2))
    print(json.dumps(results, indent=2))
    return 0


def _environment(sim: Any, names: list[str], folder: Path) -> dict[str, str]:
    """The fleet as an environment-only deployment names it, one warehouse per layout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION"))}
    handles = {name: sim.workspace(n) for n, name in enumerate(names)}
    env["SOURCES__DRONE_OPS__WORKSPACES"] = json.dumps(
        {name: {"base_url": handle.base_url} for name, handle in handles.items()}
    )
    for name, handle in handles.items():
        env[f"SOURCES__DRONE_OPS__WORKSPACES__{name.upper()}__API_KEY"] = handle.read_key
    env["DESTINATION__DUCKDB__CREDENTIALS"] = str(folder / "fleet.duckdb")
    env["DAGSTER_HOME"] = str(folder / "dagster")
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    env["DLT_DATA_DIR"] = str(folder / "dlt")
    env["HOME"] = str(folder)
    return env


if __name__ == "__main__":
    sys.exit(main())
