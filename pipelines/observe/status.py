"""`drone-sync status`: is the warehouse fresh? For monitors and cron wrappers.

Why a command of its own, not a query in each monitor: the answer ("when did each table last
load successfully, and is that too long ago") lives in `_sync_runs`, whose shape is ours (its
questions are answered by `sources/drone_ops/run_state.py`, whichever driver loaded it), and a
monitor should get it as an exit code. It only reads: a DuckDB file is opened read-only (a
running sync holds it for writing, which is said in one line with the busy code), PostgreSQL
in a read-only transaction. It never creates a file, a lock or a pipeline folder.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import (
    DEFAULT_WORKSPACE,
    Attempt,
    RunStateReader,
    checked_tables,
    connection_reader,
    redact,
    settings,
)

from ..exit_codes import EXIT_BUSY, EXIT_CONFIG, EXIT_OK, EXIT_STALE
from ..run.destination import check_target
from ..run.door import WarehouseMissing, connect_postgres, read_only
from ..run.lock import WarehouseBusy
from ..run.target import Target
from .alerts import alert_hook, send_alert

STATUS_DESTINATIONS = ("duckdb", "postgres")
_AGE = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class TableFreshness:
    """One table's last successful sync and the last attempt (which may have failed)."""

    table: str
    last_success: datetime | None
    age_seconds: float | None
    stale: bool
    last_run_id: str | None = None
    last_status: str | None = None
    last_error: str | None = None


@dataclass
class StatusReport:
    warehouse: str
    max_age_seconds: float
    tables: list[TableFreshness] = field(default_factory=list)
    note: str | None = None
    """Why nothing could be found (no warehouse file, no `_sync_runs` yet)."""

    @property
    def stale(self) -> list[TableFreshness]:
        return [table for table in self.tables if table.stale]


def parse_max_age(text: str) -> float:
    """`45m`, `2h`, `90s`, `1d` or plain seconds, as seconds; a `ConfigError` otherwise."""
    match = _AGE.fullmatch(text.strip().lower())
    seconds = float(match["number"]) * _UNIT_SECONDS[match["unit"]] if match else 0.0
    if seconds <= 0:
        raise ConfigError(
            "--max-age", f"{text!r} is not a positive age; expected e.g. 90s, 45m, 2h or 1d"
        )
    return seconds


def describe_warehouse(target: Target) -> str:
    """The warehouse as a person names it: the DuckDB file, or the destination and dataset;
    and the workspace, when it is a named one (its alert must say which client failed)."""
    if target.destination == "duckdb":
        where = str(target.resolved_database().absolute())
    else:
        where = f"{target.destination} dataset {target.dataset}"
    if target.workspace != DEFAULT_WORKSPACE:
        where += f" (workspace {target.workspace})"
    return where


def read_status(target: Target, tables: Sequence[str], max_age_seconds: float) -> StatusReport:
    """Each table's freshness, read from `_sync_runs`. Raises `WarehouseBusy` when a sync holds
    the DuckDB file, `ConfigError` for a destination it cannot read."""
    if target.destination not in STATUS_DESTINATIONS:
        raise ConfigError(
            "--destination",
            f"status reads {' and '.join(STATUS_DESTINATIONS)}, not {target.destination}",
        )
    report = StatusReport(describe_warehouse(target), max_age_seconds)
    if target.destination == "duckdb":
        successes, latest = _duckdb_answers(target.resolved_database(), target.dataset, report)
    else:
        successes, latest = _postgres_answers(target.dataset, report)
    now = datetime.now(UTC)
    for name in tables:
        last = successes.get(name)
        age = (now - last).total_seconds() if last is not None else None
        attempt = latest.get(name, Attempt(None, None, None))
        report.tables.append(
            TableFreshness(
                table=name,
                last_success=last,
                age_seconds=age,
                stale=age is None or age > max_age_seconds,
                last_run_id=attempt.run_id,
                last_status=attempt.status,
                last_error=redact(attempt.error) if attempt.error else None,
            )
        )
    return report


Answers = tuple[dict[str, datetime], dict[str, Attempt]]
"""Each table's last success, and each table's latest attempt."""


def _answers(state: RunStateReader, report: StatusReport, where: str) -> Answers:
    """What status asks of `_sync_runs`; a note when no run was recorded yet."""
    if not state.has_runs():
        report.note = f"no {where}: no sync recorded yet"
        return {}, {}
    return state.last_successes(), state.latest_attempts()


def _duckdb_answers(database: Path, schema: str, report: StatusReport) -> Answers:
    try:
        with read_only(database) as connection:
            where = f"{schema}.{settings.RUNS_TABLE} in {database}"
            return _answers(connection_reader(connection, schema), report, where)
    except WarehouseMissing:
        report.note = f"no warehouse at {database.absolute()}: no sync has run there yet"
        return {}, {}


def _postgres_answers(schema: str, report: StatusReport) -> Answers:
    import psycopg2

    connection = connect_postgres(read_only=True)
    try:
        state = connection_reader(connection, schema, missing=(psycopg2.errors.UndefinedTable,))
        return _answers(state, report, f"{schema}.{settings.RUNS_TABLE}")
    finally:
        connection.close()


def human_age(seconds: float) -> str:
    """`3m 10s`, `2h 5m`, `1d 4h`: an age as a person reads it."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    for big, big_unit, small, small_unit in (
        (days, "d", hours, "h"),
        (hours, "h", minutes, "m"),
        (minutes, "m", secs, "s"),
    ):
        if big:
            return f"{big}{big_unit}" + (f" {small}{small_unit}" if small else "")
    return f"{secs}s"


def status_lines(report: StatusReport) -> list[str]:
    """One line per stale table when any is stale, else one line per table."""
    limit = human_age(report.max_age_seconds)
    lines = [f"note: {report.note}"] if report.note else []
    for table in report.stale or report.tables:
        if table.age_seconds is None:
            what = "no successful sync recorded"
        else:
            what = f"last successful sync {human_age(table.age_seconds)} ago"
        word = "stale" if table.stale else "fresh"
        cause = f"; last run {table.last_run_id}: {table.last_error}" if table.last_error else ""
        lines.append(f"{word}: {table.table}: {what} (max {limit}){cause}")
    return lines


def status_object(report: StatusReport, exit_code: int, workspace: str) -> str:
    """The one JSON object of `drone-sync status --log-format json`, naming the workspace."""
    return json.dumps(
        {
            "event": "status",
            "workspace": workspace,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "warehouse": report.warehouse,
            "stale": bool(report.stale),
            "exit_code": exit_code,
            "max_age_seconds": report.max_age_seconds,
            "note": report.note,
            "tables": {
                table.table: {
                    "stale": table.stale,
                    "last_success": table.last_success.isoformat() if table.last_success else None,
                    "age_seconds": round(table.age_seconds, 1)
                    if table.age_seconds is not None
                    else None,
                    "last_run_id": table.last_run_id,
                    "last_status": table.last_status,
                    "last_error": table.last_error,
                }
                for table in report.tables
            },
        }
    )


def stale_alert_text(report: StatusReport) -> str:
    """The alert for a stale warehouse: which tables, how old, and what their last run said."""
    parts = [f"drone-sync: warehouse {report.warehouse} is stale"]
    if report.note:
        parts.append(report.note)
    for table in report.stale:
        age = "never synced" if table.age_seconds is None else human_age(table.age_seconds)
        cause = f" (last run {table.last_run_id}: {table.last_error})" if table.last_error else ""
        parts.append(f"{table.table}: {age}{cause}")
    return "\n".join(parts)


def status_command(
    target: Target,
    tables: Sequence[str] | None,
    max_age: str,
    as_json: bool,
    workspace: str,
) -> int:
    """`drone-sync status`: lines (or one JSON object, naming `workspace`) and the
    exit code; a stale warehouse is also an alert when `runtime.slack_incoming_hook` is set."""
    try:
        hook = alert_hook()
        limit = parse_max_age(max_age)
        check_target(target, read_only=True)
        report = read_status(target, checked_tables(tables), limit)
    except ConfigError as exc:
        return _status_failed("configuration error", str(exc), EXIT_CONFIG, as_json)
    except WarehouseBusy as exc:
        return _status_failed("warehouse busy", str(exc), EXIT_BUSY, as_json)
    except DroneOpsError as exc:
        return _status_failed("error", str(exc), EXIT_STALE, as_json)
    code = EXIT_STALE if report.stale else EXIT_OK
    if as_json:
        sys.stdout.write(redact(status_object(report, code, workspace)) + "\n")
    else:
        sys.stdout.write("".join(redact(line) + "\n" for line in status_lines(report)))
    sys.stdout.flush()
    if report.stale and hook is not None:
        send_alert(hook, stale_alert_text(report))
    return code


def _status_failed(kind: str, message: str, code: int, as_json: bool) -> int:
    """Status could not be told: one line on stderr, or the one JSON object saying why."""
    if as_json:
        record: dict[str, Any] = {
            "event": "status",
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "outcome": kind,
            "exit_code": code,
            "error": message,
        }
        sys.stdout.write(redact(json.dumps(record)) + "\n")
    else:
        sys.stderr.write(redact(f"drone-sync: {kind}: {message}") + "\n")
    return code
