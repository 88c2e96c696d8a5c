"""One measured variant in a fresh process: `python -m bench.worker '<json spec>'`.

The parent reads this process's peak RSS from `os.wait4`, so nothing measured earlier pollutes
it. The spec names the variant and its inputs; the result is written as JSON to
`spec["result_path"]`. `seconds` covers the sync (or walk, or build) only, not interpreter start
and imports. With `"profile": "<path>.html"` the variant runs under pyinstrument.

The `postgres` and `models_postgres` variants read the server's connection string from
`DESTINATION__POSTGRES__CREDENTIALS`, set by the parent in this process's environment only: the
spec travels on the command line and parts of it end up in the result JSON, so the password is
kept out of both.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

VARIANTS = (
    "ours",
    "cli",
    "postgres",
    "baseline",
    "tuned",
    "floor",
    "floor_nochange",
    "dltfloor",
    "dltfloor_nochange",
    "models",
    "models_postgres",
)

if TYPE_CHECKING:
    from drone_ops_sync.pipelines.run.target import Target


def sync_target(spec: dict[str, Any], destination: str) -> Target:
    """The sync's target: the spec's DuckDB file, or the PostgreSQL database named by the
    environment's credentials; the spec's pipelines folder either way (per repetition, so each
    initial sync starts without local state; a model build needs none)."""
    from drone_ops_sync.pipelines.run.target import Target

    pipelines_dir = Path(spec["pipelines_dir"]) if spec.get("pipelines_dir") else None
    if destination == "postgres":
        return Target(destination="postgres", pipelines_dir=pipelines_dir)
    return Target(database=Path(spec["database"]), pipelines_dir=pipelines_dir)


def run_ours(spec: dict[str, Any], destination: str = "duckdb") -> dict[str, Any]:
    """One `run_sync` into the spec's database (fresh or already synced)."""
    from drone_ops_sync.pipelines.session import run_sync
    from drone_ops_sync.sources.drone_ops import read_source_config

    target = sync_target(spec, destination)
    overrides = {
        "base_url": spec["base_url"],
        "api_key": spec["api_key"],
        "max_workers": spec["max_workers"],
        "job_refresh_slices": spec.get("job_refresh_slices", 1),
    }
    started = time.monotonic()
    outcome = run_sync(target, config=read_source_config(overrides))
    seconds = time.monotonic() - started
    if not outcome.ok:
        failed = {t: r.error for t, r in outcome.report.tables.items() if r.error}
        raise RuntimeError(f"sync failed: {outcome.load_error or failed}")
    tables = outcome.report.tables
    delivery = tables.get("webhook_deliveries")
    return {
        "destination": destination,
        "seconds": seconds,
        "requests": sum(r.requests for r in tables.values()),
        "rows_seen": sum(r.rows_seen for name, r in tables.items() if name != "users"),
        "rows_written": sum(r.new + r.changed + r.retired for r in tables.values()),
        "walk_seconds": delivery.seconds if delivery else None,
        "load_seconds": outcome.load_seconds,
        "delivery_waves": outcome.delivery_waves,
        "delivery_requests": delivery.requests if delivery else 0,
        "tables": {
            name: {
                "requests": r.requests,
                "rows_seen": r.rows_seen,
                "new": r.new,
                "changed": r.changed,
                "retired": r.retired,
            }
            for name, r in tables.items()
        },
    }


def run_cli(spec: dict[str, Any]) -> dict[str, Any]:
    """`drone-sync run` as a scheduler starts it: a new process, models and snapshot included;
    `seconds` is that process's whole wall time, interpreter start and imports included."""
    import resource
    import subprocess

    script = Path(sys.executable).with_name("drone-sync")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-m", "drone_ops_sync.pipelines.console_script"]
    )
    env = {
        **os.environ,
        "SOURCES__DRONE_OPS__BASE_URL": spec["base_url"],
        "SOURCES__DRONE_OPS__API_KEY": spec["api_key"],
        "SOURCES__DRONE_OPS__MAX_WORKERS": str(spec["max_workers"]),
        # dlt's tooling link goes into this run's folder, not the machine's
        "DLT_DATA_DIR": str(Path(spec["database"]).parent / "dlt-data"),
    }
    args = [*command, "run", "--database", spec["database"], "--log-format", "json"]
    started = time.monotonic()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.monotonic() - started
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    summary = next((e for e in reversed(events) if e.get("event") == "summary"), None)
    if done.returncode != 0 or summary is None:
        raise RuntimeError(f"drone-sync run exited {done.returncode}:\n{done.stderr[-4000:]}")
    models = summary.get("models") or {}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "seconds": seconds,
        "rows_written": summary["rows_written"],
        "models_rebuilt": models.get("rebuilt"),
        "models_scope": models.get("scope"),
        "models_built": models.get("models_built"),
        "tests_passed": models.get("tests_passed"),
        "models_seconds": models.get("seconds"),
        "child_peak_rss_mb": round(children.ru_maxrss / 1024, 1),
        # the CLI process's CPU (user + system): on a shared machine, steadier than its wall
        "cpu_seconds": round(children.ru_utime + children.ru_stime, 3),
    }


def run_rest_api(spec: dict[str, Any], *, tuned: bool) -> dict[str, Any]:
    """dlt's rest_api source, defaults or tuned (see bench.baseline)."""
    from .baseline import TUNED_EXTRACT_WORKERS, run_baseline

    if tuned:
        os.environ["EXTRACT__WORKERS"] = str(TUNED_EXTRACT_WORKERS)
    started = time.monotonic()
    result = run_baseline(
        spec["base_url"],
        spec["api_key"],
        Path(spec["database"]),
        Path(spec["pipelines_dir"]),
        tuned=tuned,
    )
    result["seconds"] = time.monotonic() - started
    return result


def run_floor(spec: dict[str, Any], *, log_pages: int | None) -> dict[str, Any]:
    """The bare httpx walk (see bench.floor)."""
    from .floor import FloorWalk

    walk = FloorWalk(spec["base_url"], spec["api_key"], spec["max_workers"], log_pages=log_pages)
    result = walk.run()
    return {"seconds": result.seconds, "requests": result.requests, "bytes": result.bytes_read}


def run_models(spec: dict[str, Any], destination: str = "duckdb") -> dict[str, Any]:
    """`build_models` over an already synced database.

    On PostgreSQL the dbt target comes from `dbt_target`, as for the CLI's `--models`, resolved
    before the clock starts. The DuckDB build takes the file path directly, as it always has
    here, so its peak RSS stays comparable with earlier figures (no dlt import)."""
    from drone_ops_sync.pipelines.publish.dbt_build import DbtTarget, build_models

    warehouse: Path | DbtTarget
    if destination == "postgres":
        from drone_ops_sync.pipelines.publish.dbt_build import dbt_target

        warehouse = dbt_target(sync_target(spec, destination))
    else:
        warehouse = Path(spec["database"])
    started = time.monotonic()
    result = build_models(warehouse, "drone_ops")
    seconds = time.monotonic() - started
    measured: dict[str, Any] = {
        "destination": destination,
        "seconds": seconds,
        "ok": result.ok,
        "models_built": result.models_built,
        "tests_passed": result.tests_passed,
        "tests_failed": result.tests_failed,
        "error": result.error,
    }
    if isinstance(warehouse, Path) and result.ok:
        measured["snapshot"] = publish_snapshots(warehouse)
    return measured


def publish_snapshots(database: Path) -> dict[str, Any]:
    """The BI snapshot the CLI publishes after a model build, marts only and with the raw
    tables: seconds and bytes of each."""
    from drone_ops_sync.pipelines.publish.snapshot import publish_snapshot
    from drone_ops_sync.pipelines.publish.snapshot_plan import default_snapshot_path

    published: dict[str, Any] = {}
    for key, include_raw in (("marts", False), ("with_raw", True)):
        snapshot = publish_snapshot(
            database, "drone_ops", default_snapshot_path(database), include_raw=include_raw
        )
        published[key] = {"seconds": snapshot.seconds, "bytes": snapshot.bytes}
    return published


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs the spec's variant."""
    variant = spec["variant"]
    if variant == "ours":
        return run_ours(spec)
    if variant == "postgres":
        return run_ours(spec, "postgres")
    if variant == "cli":
        return run_cli(spec)
    if variant in ("baseline", "tuned"):
        return run_rest_api(spec, tuned=variant == "tuned")
    if variant == "floor":
        return run_floor(spec, log_pages=None)
    if variant == "floor_nochange":
        return run_floor(spec, log_pages=1)
    if variant in ("dltfloor", "dltfloor_nochange"):
        from .dlt_floor import run_dlt_floor

        return run_dlt_floor(spec, log_pages=1 if variant == "dltfloor_nochange" else None)
    if variant == "models":
        return run_models(spec)
    if variant == "models_postgres":
        return run_models(spec, "postgres")
    raise SystemExit(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: one JSON spec argument; writes the result JSON to the spec's path."""
    args = sys.argv[1:] if argv is None else argv
    spec: dict[str, Any] = json.loads(args[0])
    os.environ.setdefault("RUNTIME__LOG_LEVEL", "WARNING")
    profile_path = spec.get("profile")
    if profile_path:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.005)
        profiler.start()
        result = dispatch(spec)
        profiler.stop()
        Path(profile_path).write_text(profiler.output_html())
        Path(profile_path).with_suffix(".txt").write_text(
            profiler.output_text(unicode=False, color=False, show_all=False)
        )
    else:
        result = dispatch(spec)
    Path(spec["result_path"]).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
