"""The run-state tables: `_sync_runs`, `_sync_issues` and `_sync_delivery_marks`. What each
holds, how a run writes them, and every question anybody asks of them, in one place.

Why one owner: the sync reads its own history back (the rolling refresh's slice, where each
webhook's log walk stops), and so do `drone-sync status`, the BI snapshot, `dbt source
freshness` and Dagster. The source writes them itself (`record_resources`, the last resources
of `source.py`), so every driver keeps them, and every reader asks `RunStateReader`, through
the connection it already has (the pipeline's SQL client, or a read-only DuckDB or PostgreSQL
connection, which must create nothing): the SQL is plain enough for both engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import dlt
import duckdb
import pyarrow as pa
from dlt.common.schema.typing import TColumnSchema
from dlt.destinations.exceptions import DatabaseUndefinedRelation
from dlt.extract.resource import DltResource

from . import settings
from .report import SyncReport
from .secrets import redact
from .tables.rows import issue_table
from .tables.schema import ISSUES

RUNS_TABLE = settings.RUNS_TABLE
ISSUES_TABLE = settings.ISSUES_TABLE
MARKS_TABLE = settings.DELIVERY_MARKS_TABLE
RUN_STATE_TABLES = (RUNS_TABLE, ISSUES_TABLE, MARKS_TABLE)
DLT_LOADS_TABLE = "_dlt_loads"
"""dlt's record of the loads that completed (`status` 0)."""
FAILED_STATUSES = ("failed", "refused", "interrupted")
"""A run failed when one of its tables ended so (`skipped` does not fail a run)."""

_KINDS: dict[str, TColumnSchema] = {
    "text": {"data_type": "text"},
    "count": {"data_type": "bigint"},
    "moment": {"data_type": "timestamp", "timezone": True},
    "number": {"data_type": "double"},
}


def _columns(spec: str, *, nullable: bool = True) -> dict[str, TColumnSchema]:
    """`name:kind ...` as dlt column hints, a fresh dict per column (dlt writes into them)."""
    pairs = (item.split(":") for item in spec.split())
    return {name: {**_KINDS[kind], "nullable": nullable} for name, kind in pairs}


RUN_COLUMNS = _columns(
    "run_id:text resource:text started_at:moment finished_at:moment status:text pages:count"
    " requests:count retries:count rows_seen:count rows_new:count rows_changed:count"
    " rows_retired:count seconds:number error:text scope:text workspace:text"
)
"""`_sync_runs`: one row per table per run (docs/warehouse.md)."""
MARK_COLUMNS = _columns(
    "run_id:text webhook_id:text newest_ms:count recorded_at:moment", nullable=False
)
"""`_sync_delivery_marks`: a webhook's mark, each time it moves (the newest one counts)."""
ISSUE_COLUMNS = _columns(" ".join(f"{column.name}:text" for column in ISSUES.columns))
"""`_sync_issues`: one row per value that broke the contract, per run."""


@dataclass(frozen=True)
class RunRecord:
    """What a run records of itself once its tables are done."""

    report: SyncReport
    workspace: str
    issues: Sequence[Mapping[str, str | None]] = ()
    marks: Mapping[str, int] = field(default_factory=dict)
    """Per webhook whose mark moves: the newest entry loaded (ms)."""
    finished_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def record_resources(record: Callable[[], RunRecord | None]) -> list[DltResource]:
    """The three tables as dlt resources whose rows are read from `record` when dlt extracts
    them (after every table: `fifo`), not when the source declares them; nothing is written
    when `record` gives None. `_sync_issues` and `_sync_delivery_marks` are created even
    empty: dashboards read the one, and the other's existence says the marks are recorded."""

    def runs() -> Iterator[Any]:
        done = record()
        if done is not None:
            yield run_rows(done)

    def issues() -> Iterator[Any]:
        done = record()
        if done is not None:
            rows = issue_rows(done)
            yield issue_table(rows) if rows else dlt.mark.materialize_table_schema()

    def marks() -> Iterator[Any]:
        done = record()
        if done is not None:
            yield from _mark_items(done.report.run_id, done.marks)

    return [
        dlt.resource(runs, name=RUNS_TABLE, write_disposition="append", columns=RUN_COLUMNS),
        dlt.resource(issues, name=ISSUES_TABLE, write_disposition="append", columns=ISSUE_COLUMNS),
        dlt.resource(marks, name=MARKS_TABLE, write_disposition="append", columns=MARK_COLUMNS),
    ]


def marks_resource(run_id: str, marks: Mapping[str, int]) -> DltResource:
    """`_sync_delivery_marks` alone: what `drone-sync run` records before its first wave of
    deliveries on a warehouse whose marks are not recorded yet."""
    return dlt.resource(
        list(_mark_items(run_id, marks)),
        name=MARKS_TABLE,
        write_disposition="append",
        columns=MARK_COLUMNS,
    )


def run_rows(record: RunRecord) -> list[dict[str, Any]]:
    """One `_sync_runs` row per table of the run; the error redacted."""
    report = record.report
    return [
        {
            "run_id": report.run_id,
            "resource": result.table,
            "started_at": report.started_at,
            "finished_at": record.finished_at,
            "status": result.status,
            "pages": result.pages,
            "requests": result.requests,
            "retries": result.retries,
            "rows_seen": result.rows_seen,
            "rows_new": result.new,
            "rows_changed": result.changed,
            "rows_retired": result.retired,
            "seconds": round(result.seconds, 3),
            "error": redact(result.error) if result.error else None,
            "scope": result.scope,
            "workspace": record.workspace,
        }
        for result in report.tables.values()
    ]


def issue_rows(record: RunRecord) -> list[dict[str, str | None]]:
    """The run's `_sync_issues` rows: each issue with the run's workspace."""
    return [{**issue, "workspace": record.workspace} for issue in record.issues]


def mark_rows(run_id: str, marks: Mapping[str, int]) -> list[dict[str, Any]]:
    """One `_sync_delivery_marks` row per webhook whose mark moved, recorded now."""
    recorded_at = datetime.now(UTC)
    return [
        {"run_id": run_id, "webhook_id": hook, "newest_ms": ms, "recorded_at": recorded_at}
        for hook, ms in sorted(marks.items())
    ]


def record_tables(record: RunRecord) -> dict[str, pa.Table]:
    """The record's rows per table, as Arrow (an empty table for none): what `record_resources`
    yields, for a writer that writes them without dlt (`pipelines/run/run_record.py`)."""
    return {
        RUNS_TABLE: pa.Table.from_pylist(run_rows(record)),
        ISSUES_TABLE: issue_table(issue_rows(record)),
        MARKS_TABLE: pa.Table.from_pylist(mark_rows(record.report.run_id, record.marks)),
    }


def _mark_items(run_id: str, marks: Mapping[str, int]) -> Iterator[Any]:
    rows = mark_rows(run_id, marks)
    yield rows if rows else dlt.mark.materialize_table_schema()


@dataclass(frozen=True)
class Attempt:
    """A table's latest recorded attempt, whatever its outcome."""

    run_id: str | None
    status: str | None
    error: str | None


@dataclass(frozen=True)
class RunMoment:
    """A run and when it finished."""

    run_id: str
    finished_at: datetime


Fetch = Callable[[str], list[tuple[Any, ...]]]


class RunStateReader:
    """Every question asked of the run-state tables. Built over a connection by
    `pipeline_reader` or `connection_reader`; a table that does not exist (yet) answers as
    empty, and is asked nothing more (PostgreSQL aborts the transaction on such an error)."""

    def __init__(
        self,
        fetch: Fetch,
        qualify: Callable[[str], str],
        missing: tuple[type[BaseException], ...],
    ) -> None:
        self._fetch = fetch
        self._qualify = qualify
        self._missing_errors = missing
        self._missing: set[str] = set()

    def _rows(self, table: str, sql: str) -> list[tuple[Any, ...]] | None:
        """`sql` with `{t}` standing for `table` and `{loaded}` for the ids of the loads that
        completed; None when the table does not exist."""
        if table in self._missing:
            return None
        loaded = f"SELECT load_id FROM {self._qualify(DLT_LOADS_TABLE)} WHERE status = 0"
        try:
            return list(self._fetch(sql.format(t=self._qualify(table), loaded=loaded)))
        except self._missing_errors:
            self._missing.add(table)
            return None

    def has_runs(self) -> bool:
        """Whether `_sync_runs` exists: no run was ever recorded without it."""
        return self._rows(RUNS_TABLE, "SELECT 1 FROM {t} WHERE 1 = 0") is not None

    def job_syncs(self) -> int:
        """Successful `jobs` syncs so far: run k of a rolling job refresh walks slice k mod N.
        Only rows whose load completed (`_dlt_loads`) count: a package whose `jobs` failed
        must not move the slice on."""
        rows = self._rows(
            RUNS_TABLE,
            "SELECT count(*) FROM {t} WHERE resource = 'jobs' AND status = 'success'"
            " AND _dlt_load_id IN ({loaded})",
        )
        return int(rows[0][0]) if rows else 0

    def delivery_marks(self) -> dict[str, int] | None:
        """Each webhook's newest recorded mark (ms); None when the marks were never recorded.
        Only marks whose load completed count: one loaded beside deliveries that failed would
        make the next walk stop above entries the warehouse never got."""
        rows = self._rows(
            MARKS_TABLE,
            "SELECT webhook_id, max(newest_ms) FROM {t}"
            " WHERE _dlt_load_id IN ({loaded}) GROUP BY webhook_id",
        )
        if rows is None:
            return None
        return {str(hook): int(ms) for hook, ms in rows if hook is not None and ms is not None}

    def last_successes(self) -> dict[str, datetime]:
        """Per table, when its last successful sync finished (UTC): what freshness means."""
        rows = self._rows(
            RUNS_TABLE,
            "SELECT resource, max(finished_at) FROM {t} WHERE status = 'success' GROUP BY resource",
        )
        return {str(name): _utc(at) for name, at in rows or () if at is not None}

    def latest_attempts(self) -> dict[str, Attempt]:
        """Per table, its latest attempt: why a stale table is stale."""
        rows = self._rows(
            RUNS_TABLE,
            "SELECT r.resource, r.run_id, r.status, r.error FROM {t} r JOIN"
            " (SELECT resource, max(finished_at) AS last FROM {t} GROUP BY resource) l"
            " ON r.resource = l.resource AND r.finished_at = l.last",
        )
        return {str(row[0]): Attempt(*row[1:]) for row in rows or ()}

    def newest_run(self) -> RunMoment | None:
        """The newest run recorded, whatever its outcome."""
        rows = self._rows(
            RUNS_TABLE,
            "SELECT run_id, finished_at FROM {t} ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        )
        return RunMoment(str(rows[0][0]), _utc(rows[0][1])) if rows else None

    def newest_good_run(self) -> RunMoment | None:
        """The newest run in which no table failed: the data is as of its finish."""
        failed = ", ".join(f"'{status}'" for status in FAILED_STATUSES)
        rows = self._rows(
            RUNS_TABLE,
            "SELECT run_id, max(finished_at) AS finished_at FROM {t} GROUP BY run_id"
            f" HAVING NOT bool_or(status IN ({failed}))"
            " ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        )
        return RunMoment(str(rows[0][0]), _utc(rows[0][1])) if rows else None


def pipeline_reader(client: Any) -> RunStateReader:
    """Over a dlt pipeline's open SQL client (`with pipeline.sql_client() as client`): the
    sync's own reads, on any destination the pipeline loads into."""

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in client.execute_sql(sql) or ()]

    return RunStateReader(fetch, client.make_qualified_table_name, (DatabaseUndefinedRelation,))


def connection_reader(
    connection: Any,
    schema: str,
    *,
    catalog: str | None = None,
    missing: tuple[type[BaseException], ...] = (duckdb.CatalogException,),
) -> RunStateReader:
    """Over a DB-API connection the caller opened (read-only DuckDB by default; PostgreSQL with
    its `UndefinedTable` as `missing`), reading `schema` (of `catalog`, if several attached)."""

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        cursor = connection.cursor()
        try:
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    prefix = f"{_quote(catalog)}." if catalog else ""
    return RunStateReader(fetch, lambda table: f"{prefix}{_quote(schema)}.{_quote(table)}", missing)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _utc(value: datetime) -> datetime:
    """A timestamp from either engine as aware UTC (naive ones are UTC already)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
