"""Repairs and fingerprints of the warehouse that only a `drone-sync` run makes: rows a
replayed load wrote twice, and the data version the build record compares (what the warehouse
already holds for the source is read by the source itself: `sources.drone_ops.known`).
"""

from __future__ import annotations

import hashlib
import json
import logging

import dlt
from dlt.destinations.exceptions import DatabaseUndefinedRelation

from drone_ops_sync.sources.drone_ops import ALL_TABLES
from drone_ops_sync.sources.drone_ops.internal import ENTITIES, ENTITY_TABLES, EVENTS_TABLE

log = logging.getLogger(__name__)


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


MODEL_SOURCE_TABLES: tuple[str, ...] = (*ALL_TABLES, EVENTS_TABLE)
"""The raw tables the models read (each a table of the `drone_ops` dbt source): the synced
tables and the receiver's `_webhook_events`."""


def data_version(pipeline: dlt.Pipeline) -> str | None:
    """A fingerprint of the raw tables the models read: per table its rows, its retired
    versions and its newest load. Any load, retirement or repair changes it, whoever made it,
    so equal fingerprints mean the marts built from one still hold (`build_record.py`).

    Kept per table (compact JSON, `{"jobs": "<hash>", ...}`) so a build can tell which tables
    changed and rebuild only what depends on them (`build_plan.py`). None when the dataset
    does not exist yet, or when it cannot be read (the models are then built)."""
    versions: dict[str, str] = {}
    try:
        with pipeline.sql_client() as client:
            if not client.has_dataset():
                return None
            for name in MODEL_SOURCE_TABLES:
                entity = ENTITIES.get(name)
                history = entity is not None and entity.history
                retired = 'count("_dlt_valid_to")' if history else "0"
                try:
                    rows = client.execute_sql(
                        f'SELECT count(*), {retired}, max("_dlt_load_id")'
                        f" FROM {client.make_qualified_table_name(name)}"
                    )
                except DatabaseUndefinedRelation:
                    rows = None
                part = f"{name}={rows[0] if rows else None}"
                versions[name] = hashlib.sha256(part.encode()).hexdigest()[:16]
    except Exception as exc:
        log.info("could not read the warehouse's data version: %s: %s", type(exc).__name__, exc)
        return None
    return json.dumps(versions, sort_keys=True, separators=(",", ":"))
