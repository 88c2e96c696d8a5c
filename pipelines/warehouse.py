"""Reads what the destination already holds, so the source can load only what changed.

The warehouse itself is the sync's state: current row hashes per entity and the newest
delivery per webhook. A run that failed leaves them as they were, so the next run simply
compares again; nothing has to be repaired in a separate state store.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import dlt
import pyarrow as pa
from dlt.destinations.exceptions import DatabaseUndefinedRelation

from sources.drone_ops import DeliveryMark, KnownState
from sources.drone_ops import settings as source_settings
from sources.drone_ops.entities import ALL_TABLES, ENTITIES, ENTITY_TABLES

log = logging.getLogger(__name__)


def read_known_state(
    pipeline: dlt.Pipeline, *, delivery_overlap_seconds: int, full_refresh: bool
) -> KnownState:
    """Current versions, users, delivery high-water marks and the count of job syncs (which
    picks a rolling refresh's slice); empty on a first run. A full refresh ignores the marks
    and the count, so every delivery page and every project's jobs are walked."""
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
        if not full_refresh:
            syncs = query(
                f"SELECT count(*) AS n FROM {table(source_settings.RUNS_TABLE)}"
                " WHERE resource = 'jobs' AND status = 'success'"
            )
            known.job_syncs = int(syncs.column("n")[0].as_py()) if syncs is not None else 0
        known.users = query(f"SELECT id, _row_hash FROM {table('users')}")
        if known.users is not None:
            known.existing.add("users")
        loaded = query(
            f"SELECT webhook_id, max(created) AS newest FROM {table('webhook_deliveries')}"
            " GROUP BY webhook_id"
        )
        recorded = query(
            f"SELECT webhook_id, max(newest_ms) AS newest"
            f" FROM {table(source_settings.DELIVERY_MARKS_TABLE)} GROUP BY webhook_id"
        )
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


def remove_replayed_rows(pipeline: dlt.Pipeline) -> int:
    """Removes the extra copies of exact repeats that a replayed append can leave; returns how
    many rows it removed.

    A first load appends (see resources.py). If a run dies after the database committed a file
    but before dlt recorded the job as done, the next run's finish of the pending package loads
    that file again. Such repeats share id, version and load time (deliveries and users, which
    hold one row per id: the id), so they are told apart from real history exactly. A replayed
    file carries the same `_dlt_id`s, so no column tells the copies apart: the repeated rows
    are set aside once each, all copies deleted, and the one copy put back, in one transaction.
    """
    keys = {name: '"id", "_row_hash", "_dlt_valid_from"' for name in ENTITY_TABLES}
    one_row_per_id = ("webhook_deliveries", "users")
    keys.update(dict.fromkeys(one_row_per_id, '"id"'))
    removed = 0
    with pipeline.sql_client() as client:
        if not client.has_dataset():
            return 0
        for name, key in keys.items():
            table = client.make_qualified_table_name(name)
            current = '"_dlt_valid_to" IS NULL' if name not in one_row_per_id else "TRUE"
            # subqueries carry aliases: PostgreSQL before 16 insists on them
            repeated = (
                f"SELECT {key}, count(*) AS copies FROM {table} WHERE {current}"
                f" GROUP BY {key} HAVING count(*) > 1"
            )
            try:
                rows = client.execute_sql(
                    f"SELECT coalesce(sum(copies - 1), 0) FROM ({repeated}) AS repeated"
                )
            except DatabaseUndefinedRelation:
                continue
            extra = int(rows[0][0]) if rows and rows[0][0] is not None else 0
            if not extra:
                continue
            with client.execute_query(f"SELECT * FROM {table} WHERE FALSE") as cursor:
                columns = ", ".join(client.escape_column_name(c[0]) for c in cursor.description)
            scope = f"{current} AND ({key}) IN (SELECT {key} FROM ({repeated}) AS repeated)"
            with client.begin_transaction():
                client.execute_sql(
                    f"CREATE TEMP TABLE drone_ops_replayed AS SELECT {columns} FROM"
                    f" (SELECT {columns}, row_number() OVER (PARTITION BY {key}"
                    f' ORDER BY "_dlt_id") AS copy FROM {table} WHERE {scope}) AS numbered'
                    " WHERE copy = 1"
                )
                client.execute_sql(f"DELETE FROM {table} WHERE {scope}")
                client.execute_sql(
                    f"INSERT INTO {table} ({columns}) SELECT {columns} FROM drone_ops_replayed"
                )
                client.execute_sql("DROP TABLE drone_ops_replayed")
            log.warning("removed %d replayed rows from %s", extra, name)
            removed += extra
    return removed


def data_version(pipeline: dlt.Pipeline) -> str | None:
    """A fingerprint of the raw tables the models read: per table its rows, its retired
    versions and its newest load. Any load, retirement or repair changes it, whoever made it,
    so equal fingerprints mean the marts built from one still hold (`build_record.py`).
    None when the dataset does not exist yet."""
    parts: list[str] = []
    with pipeline.sql_client() as client:
        if not client.has_dataset():
            return None
        for name in ALL_TABLES:
            retired = 'count("_dlt_valid_to")' if ENTITIES[name].history else "0"
            try:
                rows = client.execute_sql(
                    f'SELECT count(*), {retired}, max("_dlt_load_id")'
                    f" FROM {client.make_qualified_table_name(name)}"
                )
            except DatabaseUndefinedRelation:
                rows = None
            parts.append(f"{name}={rows[0] if rows else None}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def read_data_version(pipeline: dlt.Pipeline) -> str | None:
    """`data_version`, or None when it cannot be read (the models are then built)."""
    try:
        return data_version(pipeline)
    except Exception as exc:
        log.info("could not read the warehouse's data version: %s: %s", type(exc).__name__, exc)
        return None


def _newest_per_webhook(recorded: pa.Table | None, loaded: pa.Table) -> dict[str, int]:
    """Each webhook's mark in ms: recorded in `_sync_delivery_marks` when that table exists
    (the only trustworthy source once deliveries load in waves); else, for a warehouse last
    synced before waves, the newest delivery loaded (its loads were all or nothing per
    webhook, so nothing older is missing)."""
    marks: dict[str, int] = {}
    if recorded is not None:
        for webhook_id, newest in zip(
            recorded.column("webhook_id").to_pylist(),
            recorded.column("newest").to_pylist(),
            strict=True,
        ):
            if webhook_id is not None and isinstance(newest, int):
                marks[str(webhook_id)] = newest
        return marks
    for webhook_id, newest_at in zip(
        loaded.column("webhook_id").to_pylist(), loaded.column("newest").to_pylist(), strict=True
    ):
        if webhook_id is not None and isinstance(newest_at, datetime):
            marks[str(webhook_id)] = _epoch_ms(newest_at)
    return marks


def _from_epoch_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def _epoch_ms(moment: datetime) -> int:
    """Exact integer milliseconds (float seconds would round some values)."""
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _fetch_arrow(cursor: Any) -> pa.Table:
    """The result as Arrow without Python objects per row where the driver allows it.

    dlt's own `cursor.arrow()` calls `fetch_arrow_table`, which duckdb 2.0 no longer has; its
    successor `to_arrow_table` is used directly, other drivers go through `fetchall`.
    """
    native = getattr(cursor, "native_cursor", None)
    if native is not None and hasattr(native, "to_arrow_table"):
        with warnings.catch_warnings():
            # the copy it warns about is of id/hash columns only: tens of MB at most
            warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")
            table: pa.Table = native.to_arrow_table()
        return table
    names = [column[0] for column in cursor.description]
    rows = cursor.fetchall()
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})
