"""One batch of events written in one SQL transaction, the way dlt's scd2 merge writes it.

Why not a dlt load per batch: a load's fixed cost would keep a receiver seconds behind
(docs/sync-design.md). The batch is a few rows, written through the workspace pipeline's own
SQL client: only versions newer than the held ones (`held_versions`, `newest_versions`);
each written project's current row retired at the batch's boundary unless it holds the same
`_row_hash`, as dlt's scd2 merge does for the ids of a load (`destination_scope`); the
`_webhook_events` rows replacing any of the same `delivery_id`; the load recorded in
`_dlt_loads` (`run/sql_load.py`). A batch this path cannot write exactly as dlt would (no
table yet, a column the table lacks) is not written at all: this returns None, and the batch
waits in the spool for the next run to make them (`apply.py` `NotSyncedYet`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from dlt.common.storages.load_package import create_load_id
from dlt.destinations.sql_client import SqlClientBase

from drone_ops_sync.sources.drone_ops.internal import (
    EVENTS_TABLE,
    ReceivedEvent,
    event_rows,
    held_versions,
    new_run_id,
    newest_versions,
    project_versions,
)
from drone_ops_sync.sources.drone_ops.internal import settings as source_settings

from ..run.sql_load import (
    fits,
    insert_rows,
    placeholders,
    record_load,
    table_columns,
)

PROJECTS = "projects"
VALID_FROM, VALID_TO = "_dlt_valid_from", "_dlt_valid_to"


def write_batch(
    client: SqlClientBase[Any], batch: Sequence[ReceivedEvent]
) -> dict[str, str] | None:
    """Writes one workspace's batch in one transaction through the pipeline's open SQL client;
    every delivery's outcome, or None, having written nothing, when a table or column the
    batch needs does not exist yet."""
    projects_columns = table_columns(client, PROJECTS)
    events_columns = table_columns(client, EVENTS_TABLE)
    if projects_columns is None or events_columns is None:
        return None
    ids = [str(p["id"]) for e in batch if (p := e.project()) is not None]
    held = held_versions(client, ids)
    applied, outcomes = newest_versions(batch, held)
    versions = project_versions(applied.values(), new_run_id())
    events = event_rows(batch, outcomes)
    if not fits(versions, projects_columns) or not fits(events, events_columns):
        return None
    load_id = create_load_id()
    boundary = datetime.now(UTC)
    with client.begin_transaction():
        if versions.num_rows:
            _retire_and_insert(client, versions, projects_columns, load_id, boundary)
        _replace_events(client, events, events_columns, load_id)
        record_load(client, load_id, boundary)
    return outcomes


def _retire_and_insert(
    client: Any, versions: pa.Table, columns: Sequence[str], load_id: str, boundary: datetime
) -> None:
    table = client.make_qualified_table_name(PROJECTS)
    quoted = client.escape_column_name
    ids = versions.column("id").to_pylist()
    hashes = versions.column(source_settings.ROW_HASH_COLUMN).to_pylist()
    id_marks, hash_marks = placeholders(len(ids)), placeholders(len(hashes))
    row_hash = quoted(source_settings.ROW_HASH_COLUMN)
    # dlt's scd2 retirement for the ids of a load: current rows whose hash the load lacks
    client.execute_sql(
        f"UPDATE {table} SET {quoted(VALID_TO)} = %s WHERE {quoted(VALID_TO)} IS NULL"
        f" AND {quoted('id')} IN ({id_marks}) AND {row_hash} NOT IN ({hash_marks})",
        boundary,
        *ids,
        *hashes,
    )
    current = client.execute_sql(
        f"SELECT {row_hash} FROM {table} WHERE {quoted(VALID_TO)} IS NULL"
        f" AND {row_hash} IN ({hash_marks})",
        *hashes,
    )
    already = {row[0] for row in current or ()}
    written = versions.filter(pa.array([h not in already for h in hashes], pa.bool_()))
    validity = {VALID_FROM: boundary, VALID_TO: None}
    insert_rows(client, PROJECTS, written, columns, load_id, validity)


def _replace_events(client: Any, events: pa.Table, columns: Sequence[str], load_id: str) -> None:
    """dlt's delete-insert on `delivery_id`: a delivery applied twice is one row."""
    table = client.make_qualified_table_name(EVENTS_TABLE)
    ids = events.column("delivery_id").to_pylist()
    client.execute_sql(
        f"DELETE FROM {table} WHERE {client.escape_column_name('delivery_id')}"
        f" IN ({placeholders(len(ids))})",
        *ids,
    )
    insert_rows(client, EVENTS_TABLE, events, columns, load_id)
