"""One batch of events written in one SQL transaction, the way dlt's scd2 merge writes it.

Why not a dlt load per batch: a load is state sync, extract, normalize, a merge job and the
load record, about 0.3-0.6 s of CPU even for a handful of events, which kept a receiver under
50 events/s seconds behind. The batch is a few rows, so it is written directly through the
workspace pipeline's own SQL client (the same credentials and dataset), in one transaction:

- the held versions of the batch's projects are read first (`held_versions_in`), and only
  versions newer than them are written (`newest_versions`);
- each written project's current row is retired (its `_dlt_valid_to` set to the batch's
  boundary) unless it already holds the same `_row_hash`, and the new version is inserted with
  `_dlt_valid_from` the boundary and `_dlt_valid_to` null: exactly what dlt's scd2 merge does
  for the ids of a load (`destination_scope`), so dlt's next merge sees an ordinary history;
- the `_webhook_events` rows replace any of the same `delivery_id` (dlt's delete-insert);
- every row carries a fresh `_dlt_id` and the batch's `_dlt_load_id`, which is recorded in
  `_dlt_loads` as a completed load of the source's schema, so lineage joins find it.

A batch this path cannot write exactly as dlt would (no `projects` or `_webhook_events` table
yet, or a version carrying a column the table does not have: schema evolution is dlt's) is
left to the dlt load (`apply.py`), which returns None here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from dlt.common.utils import uniq_id_base64
from dlt.destinations.exceptions import DatabaseUndefinedRelation
from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient
from dlt.destinations.sql_client import SqlClientBase

from drone_ops_sync.sources.drone_ops import (
    EVENTS_TABLE,
    ReceivedEvent,
    event_rows,
    held_versions_in,
    new_run_id,
    newest_versions,
    project_versions,
)
from drone_ops_sync.sources.drone_ops import settings as source_settings

PROJECTS = "projects"
VALID_FROM, VALID_TO = "_dlt_valid_from", "_dlt_valid_to"
INSERT_ROWS = 500
"""Rows per INSERT statement: a backlog's batch (up to 8 MiB of spool) stays a few statements
of bounded size, well inside both databases' limits on one statement."""
DLT_ID_BYTES = 10
"""The length dlt gives the `_dlt_id` it adds to Arrow rows (`uniq_id_base64(10)`)."""
ARROW_VIEW = "_drone_ops_event_rows"
"""The name the batch's Arrow rows are registered under on DuckDB, for one INSERT only."""


def write_batch(
    client: SqlClientBase[Any], batch: Sequence[ReceivedEvent]
) -> dict[str, str] | None:
    """Writes one workspace's batch in one transaction through the workspace pipeline's SQL
    client, open already (its owner, `connections.py`, decides how long it stays open);
    returns every delivery's outcome, or None when the batch must go through a dlt load
    instead (see the module's docstring)."""
    projects_columns = _columns(client, PROJECTS)
    events_columns = _columns(client, EVENTS_TABLE)
    if projects_columns is None or events_columns is None:
        return None
    ids = [str(p["id"]) for e in batch if (p := e.project()) is not None]
    held = held_versions_in(client, ids)
    applied, outcomes = newest_versions(batch, held)
    versions = project_versions(applied.values(), new_run_id())
    events = event_rows(batch, outcomes)
    if not set(versions.column_names) <= set(projects_columns):
        return None
    if not set(events.column_names) <= set(events_columns):
        return None
    load_id = _load_id()
    boundary = datetime.now(UTC)
    with client.begin_transaction():
        if versions.num_rows:
            _retire_and_insert(client, versions, projects_columns, load_id, boundary)
        _replace_events(client, events, events_columns, load_id)
        _record_load(client, load_id, boundary)
    return outcomes


def _columns(client: Any, table: str) -> list[str] | None:
    """The table's columns in order, or None when it does not exist yet."""
    try:
        with client.execute_query(
            f"SELECT * FROM {client.make_qualified_table_name(table)} WHERE 1 = 0"
        ) as cursor:
            return [str(column[0]) for column in cursor.description]
    except DatabaseUndefinedRelation:
        return None


def _load_id() -> str:
    """A load id in dlt's form (unix seconds with microseconds, as text), so load ids keep
    sorting by time whichever path wrote a row."""
    return str(datetime.now(UTC).timestamp())


def _retire_and_insert(
    client: Any, versions: pa.Table, columns: Sequence[str], load_id: str, boundary: datetime
) -> None:
    table = client.make_qualified_table_name(PROJECTS)
    quoted = client.escape_column_name
    ids = versions.column("id").to_pylist()
    hashes = versions.column(source_settings.ROW_HASH_COLUMN).to_pylist()
    id_marks, hash_marks = _marks(len(ids)), _marks(len(hashes))
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
    extra = {
        "_dlt_load_id": load_id,
        VALID_FROM: boundary,
        VALID_TO: None,
    }
    names = set(written.schema.names) | set(extra) | {"_dlt_id"}
    _insert(client, table, written, [c for c in columns if c in names], extra)


def _replace_events(client: Any, events: pa.Table, columns: Sequence[str], load_id: str) -> None:
    """dlt's delete-insert on `delivery_id`: a delivery applied twice is one row."""
    table = client.make_qualified_table_name(EVENTS_TABLE)
    ids = events.column("delivery_id").to_pylist()
    client.execute_sql(
        f"DELETE FROM {table} WHERE {client.escape_column_name('delivery_id')}"
        f" IN ({_marks(len(ids))})",
        *ids,
    )
    names = {*events.column_names, "_dlt_load_id", "_dlt_id"}
    _insert(client, table, events, [c for c in columns if c in names], {"_dlt_load_id": load_id})


def _insert(
    client: Any, table: str, rows: pa.Table, columns: Sequence[str], constants: dict[str, Any]
) -> None:
    """Inserts `rows` into `columns`, each row with a fresh `_dlt_id` and the `constants`."""
    if not rows.num_rows:
        return
    if isinstance(client, DuckDbSqlClient):
        _insert_arrow(client, table, rows, columns, constants)
        return
    values: list[list[Any]] = []
    present = {name: rows.column(name).to_pylist() for name in columns if name in rows.schema.names}
    for index in range(rows.num_rows):
        row = []
        for name in columns:
            if name in present:
                row.append(present[name][index])
            elif name == "_dlt_id":
                row.append(uniq_id_base64(DLT_ID_BYTES))
            else:
                row.append(constants.get(name))
        values.append(row)
    names = ", ".join(client.escape_column_name(name) for name in columns)
    one = f"({_marks(len(columns))})"
    for start in range(0, len(values), INSERT_ROWS):
        chunk = values[start : start + INSERT_ROWS]
        client.execute_sql(
            f"INSERT INTO {table} ({names}) VALUES {', '.join([one] * len(chunk))}",
            *(value for row in chunk for value in row),
        )


def _insert_arrow(
    client: DuckDbSqlClient,
    table: str,
    rows: pa.Table,
    columns: Sequence[str],
    constants: dict[str, Any],
) -> None:
    """`_insert` on DuckDB: the rows stay Arrow, which DuckDB scans in place, as it reads the
    parquet of a dlt load. Binding each cell as a parameter cost about half the batch's
    query CPU (measured: 15 of 29 ms for 50 events at `tenth`). A constant that is None is
    left out of the INSERT: the column is null, as a bound None would make it."""
    names: list[str] = []
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for name in columns:
        if name in rows.schema.names:
            arrays.append(rows.column(name))
        elif name == "_dlt_id":
            ids = [uniq_id_base64(DLT_ID_BYTES) for _ in range(rows.num_rows)]
            arrays.append(pa.array(ids, pa.string()))
        elif constants.get(name) is not None:
            arrays.append(pa.array([constants[name]] * rows.num_rows))
        else:
            continue
        names.append(name)
    quoted = ", ".join(client.escape_column_name(name) for name in names)
    connection = client.native_connection
    connection.register(ARROW_VIEW, pa.table(arrays, names=names))
    try:
        client.execute_sql(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM {ARROW_VIEW}")
    finally:
        connection.unregister(ARROW_VIEW)


def _record_load(client: Any, load_id: str, boundary: datetime) -> None:
    """The batch's load id in `_dlt_loads`, as a completed load of the source's schema (the
    schema hash of the newest load recorded), so a join of rows to their load finds it."""
    table = client.make_qualified_table_name("_dlt_loads")
    client.execute_sql(
        f"INSERT INTO {table} (load_id, schema_name, status, inserted_at, schema_version_hash)"
        f" SELECT %s, %s, 0, %s, (SELECT schema_version_hash FROM {table}"
        " WHERE schema_name = %s ORDER BY load_id DESC LIMIT 1)",
        load_id,
        source_settings.SOURCE_NAME,
        boundary,
        source_settings.SOURCE_NAME,
    )


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)
