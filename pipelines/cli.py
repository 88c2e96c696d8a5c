"""`drone-sync`: run, check, models, demo and the simulator, from one command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dlt
from dlt.common.configuration.exceptions import ConfigFieldMissingException
from rich.console import Console

from sources.drone_ops import ConfigError, DroneOpsError
from sources.drone_ops import settings as source_settings
from sources.drone_ops.access import check_access

from .console import live_progress, print_summary, setup_logging
from .sync import DEFAULT_DATASET, SyncOutcome, Target, run_sync

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="drone-sync",
        description="Sync a Drone Operations workspace into DuckDB and model it with dbt.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests and retries")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="sync the workspace into the warehouse")
    _target_arguments(run)
    run.add_argument(
        "--resources",
        default=None,
        help="comma-separated tables to sync (default: all of"
        f" {','.join(source_settings.ALL_TABLES)})",
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

    commands.add_parser("check", help="validate config and key, list what is reachable")

    models = commands.add_parser("models", help="build and test the dbt models")
    _target_arguments(models)
    models.add_argument("--no-test", action="store_true", help="build without running dbt tests")

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
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    console = Console()
    try:
        if args.command == "run":
            return _run(args, console)
        if args.command == "check":
            return _check(console)
        if args.command == "models":
            return _models(args, console)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(args.dir, seed=args.seed, console=console)
        if args.command == "sim":
            return int(args.sim_func(args) or 0)
    except ConfigError as exc:
        console.print(f"[bold red]configuration error[/bold red]: {exc}")
        return EXIT_CONFIG
    except DroneOpsError as exc:
        console.print(f"[bold red]error[/bold red]: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        console.print("interrupted; the next run picks up where this one stopped")
        return 130
    return EXIT_FAILED


def _target(args: argparse.Namespace) -> Target:
    return Target(destination=args.destination, database=args.database, dataset=args.dataset)


def _run(args: argparse.Namespace, console: Console) -> int:
    tables = [t.strip() for t in args.resources.split(",") if t.strip()] if args.resources else None
    target = _target(args)
    outcome = sync_with_progress(
        target,
        console,
        tables=tables,
        full_refresh=args.full_refresh,
        allow_mass_delete=args.allow_mass_delete,
    )
    print_summary(console, outcome)
    if not outcome.ok:
        return EXIT_FAILED
    if not args.no_models and target.destination == "duckdb":
        return _build_models(target, console, run_tests=True)
    return EXIT_OK


def sync_with_progress(target: Target, console: Console, **kwargs: Any) -> SyncOutcome:
    with live_progress(console) as counter:
        return run_sync(target, progress=counter, **kwargs)


def _check(console: Console) -> int:
    section = source_settings.CONFIG_SECTION
    try:
        base_url = dlt.config[f"{section}.base_url"]
        api_key = dlt.secrets[f"{section}.api_key"]
    except (ConfigFieldMissingException, KeyError) as exc:
        name = "api_key" if "api_key" in str(exc) else "base_url"
        raise ConfigError(
            f"{section}.{name}",
            f"is not set: add it to .dlt/{'secrets' if name == 'api_key' else 'config'}.toml"
            f" or set SOURCES__DRONE_OPS__{name.upper()}",
        ) from None
    jobs_path: Any = dlt.config.get(f"{section}.jobs_path") or source_settings.JOBS_PATH_TEMPLATE
    webhook_ids: Any = dlt.config.get(f"{section}.webhook_ids")
    report = check_access(
        str(base_url), str(api_key), jobs_path=str(jobs_path), webhook_ids=webhook_ids
    )
    console.print(f"API {report.base_url}: key accepted, scope [bold]{report.scope}[/bold]")
    for name, what in report.reachable.items():
        console.print(f"  [green]ok[/green]   {name}: {what}")
    for name, error in report.failures.items():
        console.print(f"  [red]fail[/red] {name}: {error}")
    return EXIT_OK if report.ok else EXIT_FAILED


def _models(args: argparse.Namespace, console: Console) -> int:
    target = _target(args)
    if target.destination != "duckdb":
        raise ConfigError("--destination", "the bundled dbt profile targets DuckDB only")
    return _build_models(target, console, run_tests=not args.no_test)


def _build_models(target: Target, console: Console, *, run_tests: bool) -> int:
    from .models import build_models

    database = target.resolved_database()
    with console.status("building dbt models"):
        result = build_models(database.resolve(), target.dataset, run_tests=run_tests)
    console.print(
        f"dbt: {result.models_built} models built, {result.tests_passed} tests passed,"
        f" {result.tests_failed} failed in {result.seconds:.1f}s"
        f" (marts in schema {target.dataset}_marts)"
    )
    for failure in result.failures:
        console.print(f"[bold red]{failure.node}[/bold red]: {failure.message}")
    if result.error:
        console.print(f"[bold red]dbt error[/bold red]: {result.error}")
    return EXIT_OK if result.ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
