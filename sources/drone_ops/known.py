"""What the warehouse already holds, read through dlt before a run walks anything.

The warehouse itself is the sync's state: a run that failed leaves it as it was, so the next
run simply compares again, and no separate state store needs repair. Read through the
pipeline's own destination client, so the plain source reads it on any destination. The
run-state tables (marks, job syncs) are asked through `run_state.py`, which owns them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import dlt
import pyarrow as pa
from dlt.destinations.exceptions import DatabaseUndefinedRelation

from .run_state import pipeline_reader
from .tables.entities import ENTITIES, ENTITY_TABLES


@dataclass
class DeliveryMark:
    """What the warehouse already holds of one webhook's delivery log."""

    stop_before_ms: int
    """Entries older than this are loaded already; the walk stops when it reaches them."""
    known_ids: frozenset[str] = frozenset()
    """Ids loaded at or after `stop_before_ms` (the overlap window), skipped when seen again."""
    newest_ms: int | None = None
    """The mark itself: everything created up to it is loaded (`stop_before_ms` is it minus
    the overlap). A chain that walks nothing new keeps it."""


@dataclass
class KnownState:
    """What the warehouse holds before the run; read by the pipeline layer."""

    current: dict[str, pa.Table] = field(default_factory=dict)
    """Per entity table: the `Entity.current_columns` of its current rows."""
    delivery_marks: dict[str, DeliveryMark] = field(default_factory=dict)
    marks_recorded: bool = True
    """Whether the marks come from `_sync_delivery_marks`. False for a warehouse without that
    table: its marks are read from the deliveries themselves, and recorded before anything
    else is loaded, so no wave ever runs on marks that a partial load could move."""
    users: pa.Table | None = None
    """`id`, `_row_hash` of the users table."""
    existing: set[str] = field(default_factory=set)
    """Tables the warehouse already has; the others are loaded by a plain append."""
    job_syncs: int | None = None
    """Successful `jobs` syncs so far (picks a rolling refresh's slice); None when this run
    must walk every project's jobs (no history yet, or `--full-refresh`)."""


def read_known_state(
    pipeline: dlt.Pipeline, *, delivery_overlap_seconds: int, full_refresh: bool
) -> KnownState:
    """Current versions, users, delivery marks and the count of job syncs; empty on a first
    run. A full refresh ignores the marks and the count, so everything is walked."""
    # a new warehouse has no marks yet: its (empty) marks table is created before any load
    known = KnownState(marks_recorded=False)
    with pipeline.sql_client() as client:
        if not client.has_dataset():
            return known

        def query(sql: str, *args: Any) -> pa.Table | None:
            try:
                with client.execute_query(sql, *args) as cursor:
                    return _fetch_arrow(cursor)
            except DatabaseUndefinedRelation:
                return None

        def table(name: str) -> str:
            return client.make_qualified_table_name(name)

        for name in ENTITY_TABLES:
            columns = ", ".join(ENTITIES[name].current_columns)
            current = query(f"SELECT {columns} FROM {table(name)} WHERE _dlt_valid_to IS NULL")
            if current is not None:
                known.current[name] = current
                known.existing.add(name)
        state = pipeline_reader(client)
        if not full_refresh:
            known.job_syncs = state.job_syncs()
        known.users = query(f"SELECT id, _row_hash FROM {table('users')}")
        if known.users is not None:
            known.existing.add("users")
        loaded = query(
            f"SELECT webhook_id, max(created) AS newest FROM {table('webhook_deliveries')}"
            " GROUP BY webhook_id"
        )
        recorded = state.delivery_marks()
        known.marks_recorded = recorded is not None
        if loaded is None:
            # no deliveries (or none left): every log is walked whole, whatever a mark says
            return known
        known.existing.add("webhook_deliveries")
        if full_refresh:
            return known
        overlap_ms = delivery_overlap_seconds * 1000
        for webhook_id, newest_ms in _newest_per_webhook(recorded, loaded).items():
            stop_before = _from_epoch_ms(newest_ms - overlap_ms)
            recent = query(
                f"SELECT id FROM {table('webhook_deliveries')}"
                " WHERE webhook_id = %s AND created >= %s",
                webhook_id,
                stop_before,
            )
            ids = frozenset(recent.column("id").to_pylist()) if recent is not None else frozenset()
            known.delivery_marks[webhook_id] = DeliveryMark(
                stop_before_ms=newest_ms - overlap_ms, known_ids=ids, newest_ms=newest_ms
            )
    return known


def _newest_per_webhook(recorded: dict[str, int] | None, loaded: pa.Table) -> dict[str, int]:
    """Each webhook's mark in ms: recorded in `_sync_delivery_marks` when that table exists
    (the only trustworthy source, as deliveries load in waves); else, for a warehouse whose
    marks were never recorded, the newest delivery loaded."""
    if recorded is not None:
        return recorded
    marks: dict[str, int] = {}
    for webhook_id, newest_at in zip(
        loaded.column("webhook_id").to_pylist(), loaded.column("newest").to_pylist(), strict=True
    ):
        if webhook_id is not None and isinstance(newest_at, datetime):
            marks[str(webhook_id)] = _epoch_ms(newest_at)
    return marks


def held_versions(
    client: Any, project_ids: Iterable[str], written_since: datetime | None = None
) -> dict[str, int]:
    """The `updated` (unix ms) of the current warehouse row of each of `project_ids`: what a
    received event's version must beat; empty before any sync created `projects`. With
    `written_since`, only current rows written at or after it (`_dlt_valid_from`). Through an
    open SQL client, so a caller can read and then write in one connection (the event
    applier's transaction)."""
    ids = sorted(set(project_ids))
    if not ids:
        return {}
    placeholders = ", ".join(["%s"] * len(ids))
    since = "" if written_since is None else " AND _dlt_valid_from >= %s"
    args: list[object] = [*ids] if written_since is None else [*ids, written_since]
    try:
        rows = client.execute_sql(
            f"SELECT id, updated FROM {client.make_qualified_table_name('projects')}"
            f" WHERE _dlt_valid_to IS NULL AND id IN ({placeholders}){since}",
            *args,
        )
    except DatabaseUndefinedRelation:
        return {}
    return {
        str(row[0]): _epoch_ms(row[1] if row[1].tzinfo else row[1].replace(tzinfo=UTC))
        for row in rows or ()
        if row[1]
    }


def _from_epoch_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def _epoch_ms(moment: datetime) -> int:
    """Exact integer milliseconds (float seconds would round some values)."""
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _fetch_arrow(cursor: Any) -> pa.Table:
    """The result as Arrow, through duckdb's `to_arrow_table` (dlt's `cursor.arrow()` calls
    `fetch_arrow_table`, which duckdb 2.0 no longer has) or `fetchall`. This is the one place
    that casts: `fetchall` types a column by its values, so one with none (an empty table) is
    read as the text every key column here holds; Arrow will not compare null with ids."""
    native = getattr(cursor, "native_cursor", None)
    if native is not None and hasattr(native, "to_arrow_table"):
        with warnings.catch_warnings():
            # the copy it warns about is of id/hash columns only: tens of MB at most
            warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")
            table: pa.Table = native.to_arrow_table()
        return table
    names = [column[0] for column in cursor.description]
    rows = cursor.fetchall()
    table = pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})
    return table.cast(
        pa.schema(
            [(f.name, pa.string() if pa.types.is_null(f.type) else f.type) for f in table.schema]
        )
    )
