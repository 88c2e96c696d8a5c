"""A few rows written by SQL in one transaction, recorded as a completed dlt load.

Why: a dlt load's fixed cost is large for a few rows (docs/sync-design.md). Two writers write
a handful of rows into tables dlt already made: the event receiver's batch (`listen/write.py`)
and a run's record (`run_record.py`), through the workspace pipeline's own SQL client, inside
one transaction the caller opens. `table_columns` is None for a missing table, so a writer
never writes a table or column dlt has not made (schema evolution is dlt's): the run record
then goes through a dlt load, an event batch waits for the next run;
`insert_rows` gives every row a fresh `_dlt_id` and the load's `_dlt_load_id`; `record_load`
records the load in `_dlt_loads` as completed, so whoever counts only completed loads finds
it. DuckDB and PostgreSQL take the same statements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa
from dlt.common.utils import uniq_id_base64
from dlt.destinations.exceptions import DatabaseUndefinedRelation
from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient

from drone_ops_sync.sources.drone_ops.internal import settings as source_settings

INSERT_ROWS = 500
"""Rows per INSERT statement: a receiver backlog's batch (up to 8 MiB of spool) stays a few
statements of bounded size, well inside both databases' limits on one statement."""
DLT_ID_BYTES = 10
"""The length dlt gives the `_dlt_id` it adds to Arrow rows (`uniq_id_base64(10)`)."""
LOADS_TABLE = "_dlt_loads"
ARROW_VIEW = "_drone_ops_sql_load_rows"
"""The name Arrow rows are registered under on DuckDB, for one INSERT only."""


def table_columns(client: Any, table: str) -> list[str] | None:
    """The table's columns in order, or None when it does not exist yet. Asked outside the
    write's transaction: PostgreSQL aborts a transaction on a missing table."""
    try:
        with client.execute_query(
            f"SELECT * FROM {client.make_qualified_table_name(table)} WHERE 1 = 0"
        ) as cursor:
            return [str(column[0]) for column in cursor.description]
    except DatabaseUndefinedRelation:
        return None


def fits(rows: pa.Table, columns: Sequence[str] | None) -> bool:
    """Whether the table exists and holds every column the rows carry."""
    return columns is not None and set(rows.column_names) <= set(columns)


def insert_rows(
    client: Any,
    table: str,
    rows: pa.Table,
    columns: Sequence[str],
    load_id: str,
    constants: Mapping[str, Any] | None = None,
) -> None:
    """Inserts `rows` into `table` (`columns` from `table_columns`): each with its own values,
    a fresh `_dlt_id` and the `constants`; other columns are left null, as dlt leaves them."""
    if not rows.num_rows:
        return
    written = _written(rows, columns, {**(constants or {}), "_dlt_load_id": load_id})
    if isinstance(client, DuckDbSqlClient):
        _insert_arrow(client, table, written)
    else:
        _insert_values(client, table, written)


def _written(rows: pa.Table, columns: Sequence[str], fixed: Mapping[str, Any]) -> pa.Table:
    """What a row written carries, in the table's column order: the rows' own columns the
    table has, a fresh `_dlt_id`, and the fixed values. A fixed value that is None is left
    out: the column is null, as a bound None would make it."""
    names: list[str] = []
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for name in columns:
        if name in rows.column_names:
            arrays.append(rows.column(name))
        elif name == "_dlt_id":
            ids = [uniq_id_base64(DLT_ID_BYTES) for _ in range(rows.num_rows)]
            arrays.append(pa.array(ids, pa.string()))
        elif fixed.get(name) is not None:
            arrays.append(pa.array([fixed[name]] * rows.num_rows))
        else:
            continue
        names.append(name)
    return pa.table(arrays, names=names)


def _insert_arrow(client: DuckDbSqlClient, table: str, written: pa.Table) -> None:
    """On DuckDB: one INSERT from the Arrow rows, which DuckDB scans in place (cheaper than
    binding each cell as a parameter)."""
    quoted = ", ".join(client.escape_column_name(name) for name in written.column_names)
    qualified = client.make_qualified_table_name(table)
    connection = client.native_connection
    connection.register(ARROW_VIEW, written)
    try:
        client.execute_sql(f"INSERT INTO {qualified} ({quoted}) SELECT {quoted} FROM {ARROW_VIEW}")
    finally:
        connection.unregister(ARROW_VIEW)


def _insert_values(client: Any, table: str, written: pa.Table) -> None:
    """Elsewhere: multi-row INSERTs of bound parameters, at most `INSERT_ROWS` rows each."""
    values = list(zip(*(column.to_pylist() for column in written.columns), strict=True))
    qualified = client.make_qualified_table_name(table)
    names = ", ".join(client.escape_column_name(name) for name in written.column_names)
    one = f"({placeholders(written.num_columns)})"
    for start in range(0, len(values), INSERT_ROWS):
        chunk = values[start : start + INSERT_ROWS]
        client.execute_sql(
            f"INSERT INTO {qualified} ({names}) VALUES {', '.join([one] * len(chunk))}",
            *(value for row in chunk for value in row),
        )


def record_load(client: Any, load_id: str, inserted_at: datetime) -> None:
    """The load id in `_dlt_loads`, as a completed load of the source's schema (the newest
    load's hash: the rows went into tables that schema describes)."""
    table = client.make_qualified_table_name(LOADS_TABLE)
    client.execute_sql(
        f"INSERT INTO {table} (load_id, schema_name, status, inserted_at, schema_version_hash)"
        f" SELECT %s, %s, 0, %s, (SELECT schema_version_hash FROM {table}"
        " WHERE schema_name = %s ORDER BY load_id DESC LIMIT 1)",
        load_id,
        source_settings.SOURCE_NAME,
        inserted_at,
        source_settings.SOURCE_NAME,
    )


def placeholders(count: int) -> str:
    """`%s, %s, ...`: one parameter mark per value."""
    return ", ".join(["%s"] * count)
