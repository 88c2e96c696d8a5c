"""Cross-workspace leaks counted, for `python -m bench fleet-steady`.

After a fleet run, every workspace's current ids in the warehouse should be the ids its own API
lists, table by table. Both sides are read without the sync's code, so a bug there cannot hide
itself: the API through the floor walk (`floor.FloorWalk`, every page of every list, the
delivery logs whole), the warehouse with plain SQL on `drone_ops_<name>`, the schema each
workspace's raw tables live in (docs/fleet.md, "Where each workspace's rows are").

A workspace is mismatched if any of its tables holds an id its API does not list, or lacks one it
does; a row is in the wrong workspace if its id is not in its own workspace's API but is in
another's (ids may be shared by workspaces, as the predefined job types are, so an id alone
proves nothing: only one its own API lacks).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .floor import FloorWalk

DATASET = "drone_ops"
CURRENT_TABLES = ("projects", "jobs", "job_types", "team_members", "webhooks")
"""History tables: a row is current while its `_dlt_valid_to` is null."""
APPEND_TABLES = ("webhook_deliveries",)
"""Tables of events, one row per id, all current."""
TABLES = CURRENT_TABLES + APPEND_TABLES

Ids = dict[str, set[str]]
"""A workspace's ids, by table."""


def _page_ids(path: str, body: bytes) -> tuple[str, list[str]]:
    """The table a page of the API fills and the ids on it."""
    page = orjson.loads(body)
    parts = path.strip("/").split("/")  # v1, list, [id, [jobs]]
    if parts[1] == "projects":
        table, key = ("jobs", "jobs") if len(parts) == 4 else ("projects", "projects")
    elif parts[1] == "webhooks":
        table, key = ("webhook_deliveries", "logs") if len(parts) == 3 else ("webhooks", "webhooks")
    elif parts[1] == "team":
        table, key = "team_members", "team"
    else:
        table, key = "job_types", "job_types"
    return table, [str(item["id"]) for item in page[key]]


def api_ids(base_url: str, api_key: str, max_workers: int = 8) -> Ids:
    """Every id one workspace's API lists, by table."""
    ids: Ids = {table: set() for table in TABLES}
    lock = threading.Lock()

    def keep(path: str, body: bytes) -> None:
        table, found = _page_ids(path, body)
        with lock:
            ids[table].update(found)

    FloorWalk(base_url, api_key, max_workers, log_pages=None, on_page=keep).run()
    return ids


def fleet_api_ids(handles: Mapping[str, Any], parallel: int = 8) -> dict[str, Ids]:
    """Each workspace's API ids (handles with `base_url` and `read_key`), `parallel` at once."""
    names = list(handles)
    with ThreadPoolExecutor(parallel) as pool:
        found = pool.map(lambda n: api_ids(handles[n].base_url, handles[n].read_key), names)
        return dict(zip(names, found, strict=True))


Query = Callable[[str], list[tuple[Any, ...]]]


def warehouse_ids(query: Query, names: Sequence[str]) -> dict[str, Ids]:
    """Each workspace's current ids, by table, read from its own schema; a table its schema
    lacks holds no id."""
    schemas = {f"{DATASET}_{name}": name for name in names}
    existing = {
        (str(schema), str(table))
        for schema, table in query(
            "SELECT table_schema, table_name FROM information_schema.tables"
            f" WHERE table_name IN ({', '.join(repr(t) for t in TABLES)})"
        )
        if schema in schemas
    }
    ids: dict[str, Ids] = {name: {table: set() for table in TABLES} for name in names}
    for schema, table in sorted(existing):
        where = "" if table in APPEND_TABLES else " WHERE _dlt_valid_to IS NULL"
        rows = query(f'SELECT id FROM "{schema}"."{table}"{where}')
        ids[schemas[schema]][table] = {str(row[0]) for row in rows}
    return ids


@contextlib.contextmanager
def duckdb_query(database: Path) -> Iterator[Query]:
    """Queries on one read-only connection to a DuckDB file (the fleet has exited: nothing
    holds it; opening a file of many schemas costs, so it is opened once)."""
    import duckdb

    with duckdb.connect(str(database), read_only=True) as con:
        yield lambda sql: con.execute(sql).fetchall()


@contextlib.contextmanager
def postgres_query(dsn: str) -> Iterator[Query]:
    """Queries on one connection to a PostgreSQL database."""
    import psycopg2

    connection = psycopg2.connect(dsn, connect_timeout=10)
    try:
        with connection.cursor() as cursor:

            def run(sql: str) -> list[tuple[Any, ...]]:
                cursor.execute(sql)
                return list(cursor.fetchall())

            yield run
    finally:
        connection.close()


@dataclass
class Leaks:
    """What the warehouse and the API disagree on, over a fleet."""

    workspaces_mismatched: int = 0
    rows_in_wrong_workspace: int = 0
    ids_missing: int = 0
    """Ids a workspace's API lists that its schema does not hold as current."""
    ids_extra: int = 0
    """Ids a workspace's schema holds as current that its API does not list."""
    ids_listed: int = 0
    """Ids the APIs list in all: what was compared."""
    examples: list[str] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        return {
            "workspaces_mismatched": self.workspaces_mismatched,
            "rows_in_wrong_workspace": self.rows_in_wrong_workspace,
            "ids_missing": self.ids_missing,
            "ids_extra": self.ids_extra,
            "ids_listed": self.ids_listed,
            "mismatch_examples": self.examples,
        }


def count_leaks(api: Mapping[str, Ids], stored: Mapping[str, Ids], examples: int = 5) -> Leaks:
    """The warehouse's ids against the API's, workspace by workspace and table by table."""
    everyone: Ids = {table: set() for table in TABLES}
    for ids in api.values():
        for table in TABLES:
            everyone[table] |= ids.get(table, set())
    leaks = Leaks()
    for name, listed in api.items():
        held = stored.get(name, {})
        mismatched = False
        for table in TABLES:
            want, have = listed.get(table, set()), held.get(table, set())
            leaks.ids_listed += len(want)
            missing, extra = want - have, have - want
            if not (missing or extra):
                continue
            mismatched = True
            leaks.ids_missing += len(missing)
            leaks.ids_extra += len(extra)
            leaks.rows_in_wrong_workspace += len(extra & everyone[table])
            if len(leaks.examples) < examples:
                leaks.examples.append(
                    f"{name}.{table}: {len(missing)} missing {sorted(missing)[:3]},"
                    f" {len(extra)} extra {sorted(extra)[:3]}"
                )
        leaks.workspaces_mismatched += mismatched
    return leaks
