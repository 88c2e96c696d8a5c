"""The marts' table macros, copied into the BI snapshot beside the marts (docs/as-of.md).

Why: the snapshot copies tables with `CREATE TABLE ... AS`, which copies no macro, so a BI
tool would have the versions marts but not the as-of calls. They are copied as DuckDB keeps
them (parameters and parsed body, printed back as SQL), so the dbt project stays their one
definition; their bodies name the marts without a catalog, so they read the snapshot's own.
"""

from __future__ import annotations

import duckdb

from .snapshot_freshness import quote


def copy_table_macros(
    con: duckdb.DuckDBPyConnection, catalog: str, alias: str, schema: str
) -> None:
    """Creates in the attached snapshot `alias` every table macro of `catalog`.`schema` (the
    warehouse's marts schema), when the snapshot has that schema."""
    has_schema = con.execute(
        "SELECT count(*) FROM duckdb_schemas() WHERE database_name = ? AND schema_name = ?",
        [alias, schema],
    ).fetchone()
    if not has_schema or not has_schema[0]:
        return
    rows = con.execute(
        "SELECT function_name, parameters, macro_definition FROM duckdb_functions()"
        " WHERE database_name = ? AND schema_name = ? AND function_type = 'table_macro'"
        " ORDER BY function_name",
        [catalog, schema],
    ).fetchall()
    for name, parameters, body in rows:
        con.execute(
            f"CREATE MACRO {alias}.{quote(schema)}.{quote(name)}"
            f"({', '.join(quote(str(p)) for p in parameters)}) AS TABLE {body}"
        )
