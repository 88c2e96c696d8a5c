"""`drone-sync`: run, check, models, status, demo and the simulator, from one command.

Exit codes (`exit_codes.py`) let a scheduler tell what to do next without reading the output:
0 success, 1 a table failed or was refused (or dbt failed), 2 configuration error, 75
warehouse busy, 130 / 143 interrupted by SIGINT / SIGTERM (`signals.py`); `status`: 0 fresh,
1 stale. What a run tells besides its output (alert, metrics, lineage) is `observe/watch.py`.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from sources.drone_ops import (
    ALL_TABLES,
    ConfigError,
    DroneOpsError,
    RunOptions,
    check_access,
    checked_tables,
    read_source_config,
    redact,
)

from .console.logs import setup_logging
from .console.output import (
    DEFAULT_HEARTBEAT_SECONDS,
    JsonOutput,
    Output,
    TextOutput,
    make_console,
)
from .exit_codes import EXIT_BUSY, EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from .observe.status import DEFAULT_MAX_AGE, status_command
from .observe.watch import RunWatch
from .publish.dbt_build import dbt_target
from .publish.snapshot import CONFIG_KEY as SNAPSHOT_CONFIG_KEY
from .publish.snapshot import SnapshotPlan
from .publishing import build_models_step, command_snapshot_plan, finish_success
from .run.dlt_tooling import link_for_dlt_cli
from .run.lock import WarehouseBusy, warehouse_lock
from .run.old_layout import carry_over
from .run.signals import SignalStop
from .run.sync import sync_locked
from .run.target import (
    DEFAULT_DATASET,
    MODEL_DESTINATIONS,
    Target,
    apply_runtime_defaults,
    check_target,
    make_pipeline,
)
from .run.warehouse import read_data_version

__all__ = ["EXIT_BUSY", "EXIT_CONFIG", "EXIT_FAILED", "EXIT_OK", "build_parser", "main"]


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (the scheduler's log gets the cause, not the usage text)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: configuration error: {message} (see --help)\n")


def _output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help="text (default) or json: one JSON object per event and a final summary object",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests and retries")


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--destination",
        default="duckdb",
        help="dlt destination name (default duckdb); credentials come from dlt config",
    )
    parser.add_argument(
        "--database",
        type=Path,
        default=None,
        help="DuckDB file (default: DESTINATION__DUCKDB__CREDENTIALS or"
        " ./drone_ops_warehouse.duckdb)",
    )
    parser.add_argument("--dataset", default=DEFAULT_DATASET, help="dataset/schema name")


def _snapshot_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--snapshot",
        type=Path,
        default=None,
        metavar="PATH",
        help="where to publish the read-only BI snapshot after success (default:"
        f" {SNAPSHOT_CONFIG_KEY} or <warehouse stem>_bi.duckdb beside the warehouse)",
    )
    where.add_argument(
        "--no-snapshot", action="store_true", help="publish no BI snapshot (see docs/bi.md)"
    )
    parser.add_argument(
        "--snapshot-raw",
        action="store_true",
        help="put the raw tables of the dataset into the BI snapshot too, beside the marts",
    )


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def _observe_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--metrics-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="write a Prometheus textfile (*.prom) after the run (default: runtime.metrics_file;"
        " docs/operations.md)",
    )
    run.add_argument(
        "--heartbeat",
        type=_positive_seconds,
        default=DEFAULT_HEARTBEAT_SECONDS,
        metavar="SECONDS",
        help="with --log-format json, a heartbeat event this often while the run goes on"
        f" (default {DEFAULT_HEARTBEAT_SECONDS:g})",
    )


def _status_parser(commands: Any) -> None:
    status = commands.add_parser(
        "status",
        help="is the warehouse fresh? exit 0 fresh, 1 stale, 2 configuration error, 75 busy",
    )
    _target_arguments(status)
    _output_arguments(status)
    status.add_argument(
        "--max-age",
        default=DEFAULT_MAX_AGE,
        help=f"oldest acceptable last successful sync per table: 90s, 45m, 2h, 1d (default"
        f" {DEFAULT_MAX_AGE})",
    )
    status.add_argument(
        "--resources",
        default=None,
        help=f"comma-separated tables to check (default: all of {','.join(ALL_TABLES)})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="drone-sync",
        description="Sync a Drone Operations workspace into DuckDB and model it with dbt."
        " Exit codes: 0 ok, 1 a table or the model build failed, 2 configuration error,"
        " 75 warehouse busy, 130/143 interrupted.",
    )
    _output_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)

    run = commands.add_parser("run", help="sync the workspace into the warehouse")
    _target_arguments(run)
    _output_arguments(run)
    run.add_argument(
        "--resources",
        default=None,
        help=f"comma-separated tables to sync (default: all of {','.join(ALL_TABLES)})",
    )
    run.add_argument(
        "--full-refresh",
        action="store_true",
        help="re-read every delivery log page instead of stopping at what is loaded, and walk"
        " every project's jobs even when job_refresh_slices is set",
    )
    run.add_argument(
        "--allow-mass-delete",
        action="store_true",
        help="retire rows even when a table would lose more than max_retire_share",
    )
    run.add_argument(
        "--no-models", action="store_true", help="skip building the dbt models after the load"
    )
    run.add_argument(
        "--force-models",
        action="store_true",
        help="build the dbt models even when nothing changed since their last build (by"
        " default a run that changed nothing keeps the current marts; docs/models.md)",
    )
    _snapshot_arguments(run)
    _observe_arguments(run)

    check = commands.add_parser("check", help="validate config and key, list what is reachable")
    _output_arguments(check)

    models = commands.add_parser("models", help="build and test the dbt models")
    _target_arguments(models)
    _output_arguments(models)
    models.add_argument("--no-test", action="store_true", help="build without running dbt tests")
    _snapshot_arguments(models)

    _status_parser(commands)

    demo = commands.add_parser("demo", help="sync a simulated workspace end to end")
    demo.add_argument("--dir", type=Path, default=Path("demo"), help="where the demo writes")
    demo.add_argument("--seed", type=int, default=42)

    try:
        from simulator.cli import add_sim_commands
    except ImportError:  # the simulator ships with the project; tolerate a slim install
        pass
    else:
        add_sim_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    apply_runtime_defaults()
    args = build_parser().parse_args(argv)
    log_format = getattr(args, "log_format", None) or "text"
    console = make_console()
    beat = getattr(args, "heartbeat", DEFAULT_HEARTBEAT_SECONDS)
    output: Output = (
        JsonOutput(console, beat) if log_format == "json" else TextOutput(console, beat)
    )
    setup_logging(getattr(args, "verbose", False), json_lines=log_format == "json")
    stop = SignalStop()
    watch = RunWatch()
    with stop.installed():
        code = _dispatch(args, output, stop, watch)
        if args.command == "run":
            watch.finish(output.summary)
    return code


def _dispatch(args: argparse.Namespace, output: Output, stop: SignalStop, watch: RunWatch) -> int:
    """Runs the command; every error a user can fix ends as one line and its exit code."""
    try:
        if args.command == "run":
            return _run(args, output, stop, watch)
        if args.command == "status":
            return status_command(
                _target(args), _table_list(args.resources), args.max_age, _is_json(args)
            )
        if args.command == "check":
            return _check(output)
        if args.command == "models":
            return _models(args, output, stop)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(args.dir, seed=args.seed, console=output.console)
        if args.command == "sim":
            return int(args.sim_func(args) or 0)
    except ConfigError as exc:
        return output.fail("configuration error", redact(str(exc)), EXIT_CONFIG)
    except WarehouseBusy as exc:
        return output.fail("warehouse busy", redact(str(exc)), EXIT_BUSY)
    except DroneOpsError as exc:
        return output.fail("error", redact(str(exc)), EXIT_FAILED)
    except KeyboardInterrupt:
        return output.fail(
            "interrupted",
            f"stopped by {signal.Signals(stop.received or signal.SIGINT).name}; what was"
            " loaded is complete per table, and the next run picks up the rest",
            stop.exit_code,
        )
    return EXIT_FAILED


def _target(args: argparse.Namespace) -> Target:
    return Target(destination=args.destination, database=args.database, dataset=args.dataset)


def _is_json(args: argparse.Namespace) -> bool:
    return (getattr(args, "log_format", None) or "text") == "json"


def _table_list(resources: str | None) -> list[str] | None:
    """`--resources a,b` as names; None for all tables."""
    if resources is None:
        return None
    tables = [t.strip() for t in resources.split(",")]
    if not all(tables):
        raise ConfigError("--resources", f"{resources!r} has an empty table name")
    return tables


def _run(args: argparse.Namespace, output: Output, stop: SignalStop, watch: RunWatch) -> int:
    target = _target(args)
    # every setting and flag is read and checked once, before the lock file or anything else
    # is created, and handed down as checked values; the alert hook first, so that any later
    # configuration error is alerted
    watch.configure(target, args.metrics_file)
    output.warehouse = watch.warehouse
    tables = _table_list(args.resources)
    config = read_source_config()
    check_target(target)
    options = RunOptions(checked_tables(tables), args.allow_mass_delete, args.full_refresh)
    snapshot = _snapshot_plan(target, args)
    observers = watch.watch_run(target, config, output)
    notes: list[str] = []
    with warehouse_lock(target.lock_path(), notes):
        with output.progress() as counter, stop.cooperating() as stopping:
            outcome = sync_locked(
                target, config, options, progress=counter, cancel=stopping, observer=observers
            )
        outcome.notes[:0] = notes
        tooling_note = link_for_dlt_cli(target)
        if tooling_note:
            outcome.notes.append(tooling_note)
        if not args.no_models and target.destination not in MODEL_DESTINATIONS:
            outcome.notes.append(
                f"dbt models not built: they are built and tested on"
                f" {' and '.join(MODEL_DESTINATIONS)} only (docs/destinations.md)"
            )
        output.sync_summary(outcome)
        if stop.received is not None:
            return output.finish(stop.exit_code, "interrupted", outcome)
        if not outcome.ok:
            return output.finish(EXIT_FAILED, "failed", outcome)
        if args.no_models or target.destination not in MODEL_DESTINATIONS:
            return finish_success(target, snapshot, output, outcome)
        return build_models_step(
            target,
            output,
            stop,
            run_tests=True,
            data_version=outcome.data_version,
            reuse_current=not args.force_models,
            outcome=outcome,
            snapshot=snapshot,
        )


def _check(output: Output) -> int:
    report = check_access(read_source_config())
    output.access_report(report)
    return output.finish(
        EXIT_OK if report.ok else EXIT_FAILED, "success" if report.ok else "failed"
    )


def _models(args: argparse.Namespace, output: Output, stop: SignalStop) -> int:
    target = _target(args)
    check_target(target)
    dbt_target(target)
    snapshot = _snapshot_plan(target, args)
    with warehouse_lock(target.lock_path()):
        carry_over(target)
        return build_models_step(
            target,
            output,
            stop,
            run_tests=not args.no_test,
            data_version=_data_version(target),
            snapshot=snapshot,
        )


def _data_version(target: Target) -> str | None:
    """What the warehouse holds now, for the build record; a missing DuckDB file is left to
    the build to report (opening it here would create an empty one)."""
    if target.destination == "duckdb" and not target.resolved_database().is_file():
        return None
    return read_data_version(make_pipeline(target))


def _snapshot_plan(target: Target, args: argparse.Namespace) -> SnapshotPlan | None:
    return command_snapshot_plan(
        target,
        path_flag=args.snapshot,
        off_flag=args.no_snapshot,
        include_raw=args.snapshot_raw,
    )


if __name__ == "__main__":
    sys.exit(main())
