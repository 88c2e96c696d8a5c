"""`drone-sync`: run, check, models, status, demo, dashboard, metrics, listen and the simulator.

Exit codes (`exit_codes.py`) let a scheduler tell what to do next without reading the output;
what a run tells besides its output (alert, metrics, lineage) is `observe/watch.py`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .cli_parser import build_parser, strict_settings
from .defaults import DEFAULT_HEARTBEAT_SECONDS, MODEL_DESTINATIONS, OWN_SETTINGS
from .exit_codes import EXIT_BUSY, EXIT_CONFIG, EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from .console.output import Output
    from .observe.watch import RunWatch
    from .run.signals import SignalStop
    from .run.target import Target

# Everything else is imported by the command that uses it: `--help` and a usage error cost
# the interpreter and argparse only (no dlt, DuckDB, pyarrow, rich, dbt or simulator), and each
# command loads what its own run needs (docs/performance.md, "What the CLI imports").

__all__ = ["EXIT_BUSY", "EXIT_CONFIG", "EXIT_FAILED", "EXIT_OK", "build_parser", "main"]


def main(argv: Sequence[str] | None = None, stop: SignalStop | None = None) -> int:
    """Parses first (`--help` and usage errors end here, having imported nothing heavy), then
    loads what the command needs. `stop` is the process's; without one, the command's own."""
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(with_sim="sim" in words).parse_args(words)
    log_format = getattr(args, "log_format", None) or "text"
    if args.command == "init":
        from .project_init import init_command

        return init_command(args.dir, force=args.force, as_json=log_format == "json")
    from drone_ops_sync.sources.drone_ops.internal import require_dlt_settings

    from .console.json_output import JsonOutput
    from .console.logs import setup_logging
    from .console.output import TextOutput, make_console
    from .observe.watch import RunWatch
    from .run.signals import SignalStop

    require_dlt_settings()
    console = make_console()
    beat = getattr(args, "heartbeat", DEFAULT_HEARTBEAT_SECONDS)
    output: Output = (
        JsonOutput(console, beat) if log_format == "json" else TextOutput(console, beat)
    )
    setup_logging(getattr(args, "verbose", False), json_lines=log_format == "json")
    stop = stop if stop is not None else SignalStop()
    watch = RunWatch()
    with stop.installed():
        code = _dispatch(args, output, stop, watch)
        if args.command == "run":
            try:
                with output.status("reporting the run", then="the run is as its summary says"):
                    watch.finish(output.summary)
            except KeyboardInterrupt:
                code = output.interrupted(stop, "")
        if stop.missed:  # a signal Python could not raise (`SignalStop.installed`)
            code = output.interrupted(stop, "what the command did is done", doing="at its end")
    return code


def _dispatch(args: argparse.Namespace, output: Output, stop: SignalStop, watch: RunWatch) -> int:
    """Runs the command; every error a user can fix ends as one line and its exit code, and an
    interruption as the one line of `Output.interrupted`."""
    from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError
    from drone_ops_sync.sources.drone_ops.internal import redact

    from .run.disk_full import DiskFull
    from .run.lock import WarehouseBusy

    try:
        try:
            return _command(args, output, stop, watch)
        except Exception:
            if stop.received is None:
                raise
            # raised on the way out of a signal, so its consequence: DuckDB, for one, turns
            # the KeyboardInterrupt of a query into `RuntimeError: Query interrupted`
            raise KeyboardInterrupt from None
    except ConfigError as exc:
        return output.fail("configuration error", redact(str(exc)), EXIT_CONFIG)
    except WarehouseBusy as exc:
        return output.fail("warehouse busy", redact(str(exc)), EXIT_BUSY)
    except DiskFull as exc:
        return output.fail("disk full", redact(str(exc)), EXIT_FAILED)
    except DroneOpsError as exc:
        return output.fail("error", redact(str(exc)), EXIT_FAILED)
    except KeyboardInterrupt:
        return output.interrupted(stop, _NEXT_RUN.get(args.command, "nothing was changed"))


def _command(args: argparse.Namespace, output: Output, stop: SignalStop, watch: RunWatch) -> int:
    if args.command != "sim":  # a bad .dlt/*.toml: one line; an unknown setting: named
        from drone_ops_sync.sources.drone_ops.internal import check_settings_files

        check_settings_files(also_known=OWN_SETTINGS, refuse_as=strict_settings(args))
    if args.command == "run":
        return _run(args, output, stop, watch)
    if args.command == "status":
        return _status(args)
    if args.command == "check":
        return _check(args, output)
    if args.command == "models":
        return _models(args, output, stop)
    if args.command in ("demo", "dashboard", "metrics"):
        from .report_commands import report_command

        return report_command(args, output, _target(args) if args.command != "demo" else None)
    if args.command == "listen":
        from .listen.serve import listen_command

        return listen_command(args, output, stop)
    if args.command == "sim":
        return int(args.sim_func(args) or 0)
    return EXIT_FAILED


_NEXT_RUN = {  # what the next command does after a signal stopped one at once
    "run": "what was loaded is complete per table, and the next run picks up the rest",
    "models": "the next run builds the models",
    "dashboard": "the previous page stays in place",
    "demo": "the next demo starts afresh",
}


def _target(args: argparse.Namespace) -> Target:
    from .run.target import Target

    return Target(destination=args.destination, database=args.database, dataset=args.dataset)


def _listed(value: str | None, flag: str, what: str) -> list[str] | None:
    """`--resources a,b` or `--workspace a,b` as names; None for all."""
    from drone_ops_sync.sources.drone_ops import ConfigError

    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise ConfigError(flag, f"{value!r} has an empty {what} name")
    return names


def _run(args: argparse.Namespace, output: Output, stop: SignalStop, watch: RunWatch) -> int:
    """One workspace in this process; several, each in a process of its own (`run/fleet.py`)."""
    from drone_ops_sync.sources.drone_ops.internal import selected_names

    names = selected_names(_listed(args.workspace, "--workspace", "workspace"))
    if len(names) > 1:
        return _run_fleet(args, names, output, stop, watch)
    return _run_one(args, names[0], output, stop, watch)


def _status(args: argparse.Namespace) -> int:
    """Each selected workspace's staleness; stale (1) if any is, else the worst code."""
    from drone_ops_sync.sources.drone_ops.internal import selected_names

    from .observe.status import status_command

    names = selected_names(_listed(args.workspace, "--workspace", "workspace"))
    as_json = args.log_format == "json"
    codes = []
    for name in names:
        if len(names) > 1 and not as_json:
            sys.stdout.write(f"workspace {name}:\n")
            sys.stdout.flush()
        target = _target(args).for_workspace(name)
        tables = _listed(args.resources, "--resources", "table")
        codes.append(status_command(target, tables, args.max_age, as_json, name))
    return max(codes)


def _run_one(
    args: argparse.Namespace, name: str, output: Output, stop: SignalStop, watch: RunWatch
) -> int:
    from drone_ops_sync.sources.drone_ops import read_workspace_config
    from drone_ops_sync.sources.drone_ops.internal import RunOptions, checked_tables

    from .console.summary import interrupted_tables
    from .publishing import build_models_step, command_snapshot_plan, finish_success
    from .run.destination import check_target
    from .run.dlt_tooling import link_for_dlt_cli
    from .session import Session

    target = _target(args).for_workspace(name)
    models = target.models_target()
    # every setting and flag is read and checked once, before the lock file or anything else
    # is created, and handed down as checked values; the alert hook first, so that any later
    # configuration error is alerted
    watch.configure(target, args.metrics_file)
    output.warehouse = watch.warehouse
    tables = _listed(args.resources, "--resources", "table")
    config = read_workspace_config(name)
    check_target(target)
    options = RunOptions(checked_tables(tables), args.allow_mass_delete, args.full_refresh)
    snapshot = command_snapshot_plan(models, args)
    observers = watch.watch_run(target, config, output)
    with Session(target) as session:
        with output.progress() as counter, stop.cooperating() as stopping:
            outcome = session.sync(
                config, options, progress=counter, cancel=stopping, observer=observers
            )
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
            then = interrupted_tables(outcome)
            return output.interrupted(stop, then, doing="during the sync", outcome=outcome)
        if not outcome.ok:
            return output.finish(EXIT_FAILED, "failed", outcome)
        if args.no_models or target.destination not in MODEL_DESTINATIONS:
            return finish_success(session.for_models(), snapshot, output, outcome)
        return build_models_step(
            session.for_models(),
            output,
            stop,
            run_tests=True,
            data_version=_fleet_data_version(models, outcome.data_version, name),
            reuse_current=not args.force_models,
            outcome=outcome,
            snapshot=snapshot,
        )


def _run_fleet(
    args: argparse.Namespace,
    names: Sequence[str],
    output: Output,
    stop: SignalStop,
    watch: RunWatch,
) -> int:
    from .publishing import build_models_step, command_snapshot_plan, finish_success
    from .run.destination import check_target
    from .run.fleet import child_arguments, fleet_exit_code, run_fleet

    models = _target(args)
    watch.configure(models, args.metrics_file)
    output.warehouse = watch.warehouse
    check_target(models)
    _listed(args.resources, "--resources", "table")
    if args.parallel < 1:
        from drone_ops_sync.sources.drone_ops import ConfigError

        raise ConfigError("--parallel", f"{args.parallel}; expected a whole number of 1 or more")
    snapshot = command_snapshot_plan(models, args)
    with stop.cooperating() as stopping:
        runs = run_fleet(
            names,
            child_arguments(args),
            parallel=args.parallel,
            stop=stopping,
            on_finished=output.workspace_finished,
        )
    output.workspaces_exit = fleet_exit_code(runs)
    if stop.received is not None:
        return output.interrupted(stop, _NEXT_RUN["run"], doing="during the workspaces' runs")
    if not any(run.ok for run in runs):
        failed = ", ".join(run.name for run in runs)
        return output.finish(
            output.workspaces_exit, "failed", error=f"workspaces failed: {failed} (causes above)"
        )
    if args.no_models or models.destination not in MODEL_DESTINATIONS:
        return finish_success(models, snapshot, output)
    return build_models_step(
        models,
        output,
        stop,
        run_tests=True,
        data_version=_fleet_data_version(models, None, None),
        reuse_current=not args.force_models,
        snapshot=snapshot,
    )


def _fleet_data_version(target: Target, known: str | None, known_for: str | None) -> str | None:
    """What the whole warehouse holds, for the build record: the default workspace's data
    version when it is the only one, else every workspace's (`known` is `known_for`'s)."""
    from drone_ops_sync.sources.drone_ops.internal import DEFAULT_WORKSPACE, configured_names

    names = configured_names()
    if list(names) == [DEFAULT_WORKSPACE]:
        # the same record whether `run` (which read it) or `models` (which reads it) asks
        return known if known_for == DEFAULT_WORKSPACE else _data_version(target)
    versions = []
    for name in names:
        version = known if name == known_for else _data_version(target.for_workspace(name))
        if version is None:
            return None
        versions.append(f"{name}={version}")
    return ";".join(versions)


def _check(args: argparse.Namespace, output: Output) -> int:
    """Checks each selected workspace's settings and key; one workspace's failure is reported
    and the others are still checked."""
    from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError, read_workspace_config
    from drone_ops_sync.sources.drone_ops.internal import check_access, redact, selected_names

    names = selected_names(_listed(args.workspace, "--workspace", "workspace"))
    if len(names) == 1:
        report = check_access(read_workspace_config(names[0]))
        output.access_report(report)
        return output.finish(
            EXIT_OK if report.ok else EXIT_FAILED, "success" if report.ok else "failed"
        )
    codes = []
    for name in names:
        try:
            report = check_access(read_workspace_config(name))
        except ConfigError as exc:
            output.workspace_check(name, None, f"configuration error: {redact(str(exc))}")
            codes.append(EXIT_CONFIG)
            continue
        except DroneOpsError as exc:
            output.workspace_check(name, None, redact(str(exc)))
            codes.append(EXIT_FAILED)
            continue
        output.workspace_check(name, report, None)
        codes.append(EXIT_OK if report.ok else EXIT_FAILED)
    failed = [code for code in codes if code]
    code = EXIT_OK if not failed else (EXIT_CONFIG if set(failed) == {EXIT_CONFIG} else EXIT_FAILED)
    return output.finish(code, "success" if code == EXIT_OK else "failed")


def _models(args: argparse.Namespace, output: Output, stop: SignalStop) -> int:
    from .publish.dbt_build import dbt_target
    from .publishing import build_models_step, command_snapshot_plan
    from .run.destination import check_target
    from .session import Session

    target = _target(args)
    check_target(target)
    dbt_target(target)
    snapshot = command_snapshot_plan(target, args)
    with Session(target) as session:
        return build_models_step(
            session.for_models(),
            output,
            stop,
            run_tests=not args.no_test,
            data_version=_fleet_data_version(target, None, None),
            snapshot=snapshot,
        )


def _data_version(target: Target) -> str | None:
    """The data version for the build record; None without the file (an open would create it)."""
    from .run.destination import make_pipeline
    from .run.lock import access_lock
    from .run.warehouse import data_version

    database = target.duckdb_file()
    if database is not None and not database.is_file():
        return None
    with access_lock(database):
        return data_version(make_pipeline(target))


if __name__ == "__main__":
    sys.exit(main())
