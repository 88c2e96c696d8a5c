"""`drone-sync`: run, check, models, demo and the simulator, from one command.

Exit codes (README "Running it on a schedule", docs/operations.md) let a scheduler tell what
to do next without reading the output: 0 success, 1 a table failed or was refused (or dbt
failed), 2 configuration error, 75 warehouse busy, 130 / 143 interrupted by SIGINT / SIGTERM
(`signals.py`).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from sources.drone_ops import ConfigError, DroneOpsError
from sources.drone_ops.check import check_access
from sources.drone_ops.config import checked_tables
from sources.drone_ops.entities import ALL_TABLES
from sources.drone_ops.secrets import redact

from .dlt_tooling import link_for_dlt_cli
from .lock import WarehouseBusy, busy_message, ensure_duckdb_free, warehouse_lock
from .logs import setup_logging
from .output import JsonOutput, Output, TextOutput, make_console
from .signals import SignalStop
from .snapshot import CONFIG_KEY as SNAPSHOT_CONFIG_KEY
from .snapshot import SnapshotError, SnapshotPlan, publish_snapshot, snapshot_plan
from .sync import SyncOutcome, run_sync, source_config
from .target import (
    DEFAULT_DATASET,
    MODEL_DESTINATIONS,
    Target,
    apply_runtime_defaults,
    check_target,
    dbt_target,
    ensure_destination_reachable,
)

if TYPE_CHECKING:
    from .models import ModelsResult

EXIT_OK = 0
EXIT_FAILED = 1
"""Some table failed or was refused, the API could not be reached, or dbt failed."""
EXIT_CONFIG = 2
"""A setting or flag is wrong: the message names it. Retrying will not help."""
EXIT_BUSY = 75
"""EX_TEMPFAIL: another run holds the warehouse, or another program holds the DuckDB file."""


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
    _snapshot_arguments(run)

    check = commands.add_parser("check", help="validate config and key, list what is reachable")
    _output_arguments(check)

    models = commands.add_parser("models", help="build and test the dbt models")
    _target_arguments(models)
    _output_arguments(models)
    models.add_argument("--no-test", action="store_true", help="build without running dbt tests")
    _snapshot_arguments(models)

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
    output: Output = JsonOutput(console) if log_format == "json" else TextOutput(console)
    setup_logging(getattr(args, "verbose", False), json_lines=log_format == "json")
    stop = SignalStop()
    with stop.installed():
        try:
            if args.command == "run":
                return _run(args, output, stop)
            if args.command == "check":
                return _check(output)
            if args.command == "models":
                return _models(args, output, stop)
            if args.command == "demo":
                from .demo import run_demo

                return run_demo(args.dir, seed=args.seed, console=console)
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


def _run(args: argparse.Namespace, output: Output, stop: SignalStop) -> int:
    tables = None
    if args.resources is not None:
        tables = [t.strip() for t in args.resources.split(",")]
        if not all(tables):
            raise ConfigError("--resources", f"{args.resources!r} has an empty table name")
    target = _target(args)
    # every setting and flag is checked before the lock file or anything else is created
    source_config()
    check_target(target)
    checked_tables(tables)
    snapshot = _snapshot_plan(target, args)
    notes: list[str] = []
    with warehouse_lock(target.lock_path(), notes):
        with output.progress() as counter, stop.cooperating() as stopping:
            outcome = run_sync(
                target,
                tables=tables,
                full_refresh=args.full_refresh,
                allow_mass_delete=args.allow_mass_delete,
                progress=counter,
                stop=stopping,
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
            return _finish_success(target, snapshot, output, outcome)
        return _build_models(
            target, output, stop, run_tests=True, outcome=outcome, snapshot=snapshot
        )


def _check(output: Output) -> int:
    config = source_config()
    report = check_access(
        config.base_url,
        config.api_key,
        jobs_path=config.jobs_path,
        webhook_ids=list(config.webhook_ids) if config.webhook_ids else None,
    )
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
        return _build_models(target, output, stop, run_tests=not args.no_test, snapshot=snapshot)


def _build_models(
    target: Target,
    output: Output,
    stop: SignalStop,
    *,
    run_tests: bool,
    outcome: SyncOutcome | None = None,
    snapshot: SnapshotPlan | None = None,
) -> int:
    from .models import build_models

    if target.destination == "duckdb":
        ensure_duckdb_free(target.resolved_database().resolve())
    ensure_destination_reachable(target)
    with output.status("building dbt models"):
        result = build_models(
            dbt_target(target),
            target.dataset,
            run_tests=run_tests,
            scratch_root=target.spill_root(),
        )
    if target.destination == "duckdb" and result.error:
        busy = busy_message(target.resolved_database().resolve(), Exception(result.error))
        if busy is not None:
            raise WarehouseBusy(busy)
    output.models_summary(result, target.dataset)
    if stop.received is not None:
        # dbt turns the KeyboardInterrupt into a failed result; the signal decides the code
        return output.finish(stop.exit_code, "interrupted", outcome, result)
    if not result.ok:
        return output.finish(EXIT_FAILED, "failed", outcome, result)
    return _finish_success(target, snapshot, output, outcome, result)


def _snapshot_plan(target: Target, args: argparse.Namespace) -> SnapshotPlan | None:
    """The BI snapshot this command publishes, checked with the other settings before anything
    is written. Only a DuckDB warehouse gets one: a server destination lets BI tools read while
    a sync writes, so the snapshot flags are refused there."""
    if target.destination != "duckdb":
        if args.snapshot is not None or args.snapshot_raw:
            flag = "--snapshot" if args.snapshot is not None else "--snapshot-raw"
            raise ConfigError(
                flag,
                "a BI snapshot is made of a DuckDB warehouse only; BI tools can read"
                f" {target.destination} while a sync writes",
            )
        return None
    return snapshot_plan(
        target.resolved_database(),
        target.dataset,
        path_flag=args.snapshot,
        off_flag=args.no_snapshot,
        include_raw=args.snapshot_raw,
    )


def _publish_snapshot(target: Target, plan: SnapshotPlan | None, output: Output) -> str | None:
    """Publishes the BI snapshot (when on); the one-line reason when it could not be."""
    if plan is None:
        return None
    try:
        with output.status("publishing the BI snapshot"):
            result = publish_snapshot(
                target.resolved_database().resolve(),
                target.dataset,
                plan.path,
                include_raw=plan.include_raw,
            )
    except SnapshotError as exc:
        message = redact(str(exc))
        output.snapshot_failed(plan.path, message)
        return message
    output.snapshot_summary(result)
    return None


def _finish_success(
    target: Target,
    snapshot: SnapshotPlan | None,
    output: Output,
    outcome: SyncOutcome | None = None,
    models: ModelsResult | None = None,
) -> int:
    """Ends a command that succeeded: publishes the BI snapshot, then the final summary. Only
    here, so a failed or interrupted run never publishes half-updated data; a snapshot that
    cannot be published fails the command (exit 1) and leaves the previous one in place."""
    error = _publish_snapshot(target, snapshot, output)
    if error is not None:
        return output.finish(EXIT_FAILED, "failed", outcome, models, error=error)
    return output.finish(EXIT_OK, "success", outcome, models)


if __name__ == "__main__":
    sys.exit(main())
