"""`drone-sync demo`, `drone-sync dashboard` and `drone-sync metrics`: the commands that show
the data rather than sync it. `dashboard` and `metrics` read the BI snapshot only, never the
warehouse, so they run while a sync runs and never block one (docs/bi.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError

from .console.output import Output
from .exit_codes import EXIT_OK
from .run.target import Target


def report_command(args: argparse.Namespace, output: Output, target: Target | None) -> int:
    """Runs one of the three commands; errors a user can fix are `DroneOpsError`s."""
    if args.command == "demo" or target is None:
        from .demo import run_demo

        return run_demo(args.dir, seed=args.seed, console=output.console)
    snapshot = snapshot_path(target, args.snapshot)
    as_json = getattr(args, "log_format", None) == "json"
    if args.command == "dashboard":
        return _dashboard(snapshot, target.dataset, args.output, output, as_json)
    return _metrics(snapshot, target.dataset, output, as_json)


def snapshot_path(target: Target, flag: Path | None) -> Path:
    """`--snapshot`, else the snapshot the warehouse's runs publish (docs/bi.md); only read
    here, so its folder may be read-only."""
    from .publish.snapshot_plan import configured_snapshot

    if flag is not None:
        return flag
    if target.destination != "duckdb":
        raise ConfigError(
            "--destination",
            "the dashboard and the metrics read the BI snapshot of a DuckDB warehouse; give"
            " --snapshot PATH",
        )
    located = configured_snapshot(target.resolved_database())
    if located is None:
        raise ConfigError("--snapshot", "the BI snapshot is turned off: give --snapshot PATH")
    return located[1]


def _dashboard(
    snapshot: Path, dataset: str, path: Path | None, output: Output, as_json: bool
) -> int:
    from .publish.dashboard import default_dashboard_path, write_dashboard
    from .run.destination import check_creatable

    page = path if path is not None else default_dashboard_path(snapshot)
    check_creatable("--output", page, hint="" if path is not None else "; give --output PATH")
    written = write_dashboard(snapshot, dataset, page).resolve()
    if as_json:
        sys.stdout.write(json.dumps({"event": "dashboard", "ok": True, "path": str(written)}))
        sys.stdout.write("\n")
    else:
        output.console.print(
            f"Dashboard: {written} ({written.stat().st_size / 1024:.0f} KB); open"
            f" {written.as_uri()} in a browser",
            markup=False,
            highlight=False,
        )
    return EXIT_OK


def _metrics(snapshot: Path, dataset: str, output: Output, as_json: bool) -> int:
    from rich.table import Table

    from .publish.metrics import read_metrics_file

    if not snapshot.is_file():
        raise DroneOpsError(
            f"no BI snapshot at {snapshot}: run `drone-sync run` or `drone-sync models` first"
        )
    metrics = read_metrics_file(snapshot, dataset)
    if as_json:
        for metric in metrics:
            sys.stdout.write(json.dumps({"event": "metric", **vars(metric)}) + "\n")
        return EXIT_OK
    if not metrics:
        output.console.print("No metrics yet: the models have not been built (drone-sync models).")
        return EXIT_OK
    table = Table(title=f"Metrics of {snapshot.name}", title_justify="left")
    for column in ("workspace", "metric", "label", "value"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for metric in metrics:
        table.add_row(metric.workspace, metric.name, metric.label, metric.shown())
    output.console.print(table)
    return EXIT_OK
