"""`drone-sync`'s command line: every sub-command, flag and help text, and nothing else.

Kept apart from the commands (`cli.py`) and importing no more than argparse and the defaults,
so that `drone-sync --help`, `drone-sync run --help` and a usage error are answered without
loading dlt, DuckDB, pyarrow, rich, dbt or the simulator (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from .defaults import (
    DEFAULT_APPLY_SECONDS,
    DEFAULT_DATASET,
    DEFAULT_FLEET_PARALLEL,
    DEFAULT_FOLLOW_MARTS_SECONDS,
    DEFAULT_HEARTBEAT_SECONDS,
    DEFAULT_LISTEN_HOST,
    DEFAULT_LISTEN_PORT,
    DEFAULT_MAX_AGE,
    SNAPSHOT_CONFIG_KEY,
    STRICT_SETTINGS_ENV,
)
from .exit_codes import EXIT_CONFIG

__all__ = ["DISTRIBUTION", "SIM_HELP", "build_parser", "strict_settings"]

DISTRIBUTION = "drone-ops-sync"
"""The name pip installs us under (pyproject.toml), whose version `--version` prints."""


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (the scheduler's log gets the cause, not the usage text)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: configuration error: {message} (see --help)\n")


def _global_arguments(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    """`--log-format`, `-v` and `--strict-settings`, before the command and after it. Only the
    top level has defaults: argparse copies a sub-command's defaults over what the top level
    parsed, which would undo `drone-sync --log-format json run`."""
    unset: dict[str, Any] = {} if top_level else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="text (default) or json: one JSON object per event and a final summary object",
        **unset,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log requests and retries", **unset
    )
    parser.add_argument(
        "--strict-settings",
        action="store_true",
        **unset,
        help="refuse to run (exit 2) when a key or section in .dlt/*.toml or a variable in"
        " the environment is one nothing reads (a misspelling, otherwise a warning naming the"
        f" closest valid name, and ignored); for CI and deploys; also {STRICT_SETTINGS_ENV}=1",
    )


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--destination",
        default="duckdb",
        help="dlt destination name (default duckdb); credentials come from dlt config",
    )
    parser.add_argument(
        "--database",
        type=Path,
        help="DuckDB file (default: DESTINATION__DUCKDB__CREDENTIALS or"
        " ./drone_ops_warehouse.duckdb)",
    )
    parser.add_argument("--dataset", default=DEFAULT_DATASET, help="dataset/schema name")


def _workspace_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        metavar="NAME[,NAME...]",
        help="the workspaces to use: `default` (the top-level settings) or names under"
        " [sources.drone_ops.workspaces.<name>]; default: all configured (docs/fleet.md)",
    )


def _snapshot_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--snapshot",
        type=Path,
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


def strict_settings(args: argparse.Namespace) -> str | None:
    """What asks for unknown settings to be refused, to name in the error: the flag, or the
    variable (pip's and dbt's way); None when nothing does."""
    if getattr(args, "strict_settings", False):
        return "--strict-settings"
    if os.environ.get(STRICT_SETTINGS_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return STRICT_SETTINGS_ENV
    return None


class _VersionAction(argparse.Action):
    """`--version`: `drone-sync <version>` of the installed distribution, looked up only when
    asked (importlib.metadata reads the installed metadata; `--help` need not pay for that)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print drone-sync's version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        from importlib.metadata import version

        sys.stdout.write(f"drone-sync {version(DISTRIBUTION)}\n")
        parser.exit(0)


def _init_parser(commands: Any) -> None:
    init = commands.add_parser(
        "init",
        help="write a starter .dlt/config.toml and .dlt/secrets.toml into a folder",
    )
    init.add_argument(
        "dir", nargs="?", type=Path, default=Path("."), metavar="DIR", help="default: here"
    )
    init.add_argument(
        "--force", action="store_true", help="overwrite the starter files if they exist"
    )
    _global_arguments(init)


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
    _workspace_arguments(status)
    _global_arguments(status)
    status.add_argument(
        "--max-age",
        default=DEFAULT_MAX_AGE,
        help=f"oldest acceptable last successful sync per table: 90s, 45m, 2h, 1d (default"
        f" {DEFAULT_MAX_AGE})",
    )
    status.add_argument(
        "--resources",
        help="comma-separated tables to check (default: every table; `drone-sync check`"
        " lists them)",
    )


def _listen_parser(commands: Any) -> None:
    listen = commands.add_parser(
        "listen",
        help="receive the API's webhook deliveries into a spool file (docs/events.md)",
    )
    listen.add_argument(
        "--host",
        default=DEFAULT_LISTEN_HOST,
        help=f"address to listen on (default {DEFAULT_LISTEN_HOST})",
    )
    listen.add_argument(
        "--port",
        type=int,
        default=DEFAULT_LISTEN_PORT,
        help=f"port to listen on; 0 picks a free one (default {DEFAULT_LISTEN_PORT})",
    )
    listen.add_argument(
        "--spool",
        type=Path,
        metavar="DIR",
        help="folder of the spool's segments events.<n>.jsonl (default: .drone_sync/"
        "<warehouse file>/events/ beside the warehouse)",
    )
    listen.add_argument(
        "--apply-every",
        type=float,
        default=DEFAULT_APPLY_SECONDS,
        metavar="SECONDS",
        help="apply received project events to the warehouse this often; 0 only spools them"
        f" (default {DEFAULT_APPLY_SECONDS:g})",
    )
    listen.add_argument(
        "--follow-marts",
        type=float,
        default=DEFAULT_FOLLOW_MARTS_SECONDS,
        metavar="SECONDS",
        help="after events changed projects, rebuild the models that depend on them and"
        " republish the BI snapshot, with at least this long between two builds; 0 leaves"
        " that to the scheduled run"
        f" (default {DEFAULT_FOLLOW_MARTS_SECONDS:g})",
    )
    _snapshot_arguments(listen)
    _target_arguments(listen)
    _global_arguments(listen)


def build_parser(*, with_sim: bool = True) -> argparse.ArgumentParser:
    """The whole command line; `with_sim=False` lists `sim` without importing the simulator
    (`main` does so unless `sim` is on the command line)."""
    parser = _OneLineParser(
        prog="drone-sync",
        description="Sync a Drone Operations workspace into DuckDB and model it with dbt."
        " Exit codes: 0 ok, 1 a table or the model build failed, 2 configuration error,"
        " 75 warehouse busy, 130/143 interrupted.",
    )
    _global_arguments(parser, top_level=True)
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    _init_parser(commands)

    run = commands.add_parser("run", help="sync the workspaces into the warehouse")
    _target_arguments(run)
    _workspace_arguments(run)
    _global_arguments(run)
    run.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_FLEET_PARALLEL,
        metavar="N",
        help="with several workspaces, how many sync at once, each in its own process"
        f" (default {DEFAULT_FLEET_PARALLEL})",
    )
    run.add_argument(
        "--resources",
        help="comma-separated tables to sync (default: every table; `drone-sync check` lists them)",
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
        help="build and test every dbt model (by default a run builds only the models"
        " downstream of the tables that changed since the last build, and a full build runs"
        " at least daily; docs/models.md)",
    )
    _snapshot_arguments(run)
    _observe_arguments(run)

    check = commands.add_parser("check", help="validate config and key, list what is reachable")
    _workspace_arguments(check)
    _global_arguments(check)

    models = commands.add_parser("models", help="build and test the dbt models")
    _target_arguments(models)
    _global_arguments(models)
    models.add_argument("--no-test", action="store_true", help="build without running dbt tests")
    _snapshot_arguments(models)

    _status_parser(commands)

    demo = commands.add_parser("demo", help="sync a simulated workspace end to end")
    demo.add_argument("--dir", type=Path, default=Path("demo"), help="where the demo writes")
    demo.add_argument("--seed", type=int, default=42)

    _report_parsers(commands)
    _listen_parser(commands)

    if with_sim:
        _sim_commands(commands)
    else:
        commands.add_parser("sim", help=SIM_HELP, add_help=False)
    return parser


SIM_HELP = "run the local Drone Operations API simulator"
BI_SNAPSHOT_HELP = (
    "The BI snapshot is a DuckDB file that `drone-sync run` and `drone-sync models` republish"
    " after each success (default <warehouse stem>_bi.duckdb beside the warehouse, or"
    f" {SNAPSHOT_CONFIG_KEY}; false publishes none): the marts, schema <dataset>_marts (dim_*"
    " and fct_* tables), and the run records. A BI tool or notebook opens it read-only"
    " (DuckDB's read_only=True, or a read-only DuckDB connection); replacing it never waits"
    " for them, and reading it never waits for or blocks a sync. This command only reads it,"
    " so it works on a read-only copy too."
)


def _report_parsers(commands: Any) -> None:
    """`dashboard` and `metrics`: both read the BI snapshot, never the warehouse (docs/bi.md)."""
    dashboard = commands.add_parser(
        "dashboard",
        help="write the dashboard page of the BI snapshot (docs/dashboard.md)",
        description="Writes the dashboard of the BI snapshot: one self-contained HTML page,"
        " opened from disk in a browser, with no server and no request leaving the machine."
        f" {BI_SNAPSHOT_HELP}",
    )
    metrics = commands.add_parser(
        "metrics",
        help="print the metrics of the BI snapshot (docs/metrics.md)",
        description="Prints the metrics of the BI snapshot, the dashboard's tiles (the table"
        f" <dataset>_marts.fct_metrics). {BI_SNAPSHOT_HELP}",
    )
    for parser in (dashboard, metrics):
        _target_arguments(parser)
        _global_arguments(parser)
        parser.add_argument(
            "--snapshot",
            type=Path,
            metavar="PATH",
            help="the BI snapshot to read (default: the one the warehouse's runs publish)",
        )
    dashboard.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="where to write the page (default: <snapshot stem>_dashboard.html beside it)",
    )


def _sim_commands(commands: Any) -> None:
    """The simulator's own sub-commands; its modules (uvicorn, Starlette, the generator) are
    imported only when `sim` is asked for, the listing in `--help` costs nothing."""
    try:
        from drone_ops_sync.simulator.cli import add_sim_commands
    except ImportError:  # the simulator ships with the project; tolerate a slim install
        commands.add_parser("sim", help=SIM_HELP)
    else:
        add_sim_commands(commands)
