"""The parts of the BI snapshot that every successful run changes: `_snapshot_info`, the run
records `<dataset>._sync_runs`, and the marts its build rebuilt.

Why a module of its own: a run that changed no data keeps the marts, and one that rebuilt a
few keeps the others; copying them again only to move a "data as of" time costs seconds to
minutes. Such a run writes only what changed, in a byte copy of the previous snapshot
(`refresh_copy`) that the caller renames over it: the file a reader holds is only ever read,
never written.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from drone_ops_sync.sources.drone_ops.internal import connection_reader
from drone_ops_sync.sources.drone_ops.internal import settings as source_settings

from .snapshot_plan import marts_schema

log = logging.getLogger(__name__)

INFO_TABLE = "_snapshot_info"
RUNS_TABLE = source_settings.RUNS_TABLE
INFO_COLUMNS = (
    ("published_at", "TIMESTAMPTZ"),
    ("source_database", "VARCHAR"),
    ("dataset", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("run_finished_at", "TIMESTAMPTZ"),
    ("last_sync_run_id", "VARCHAR"),
    ("last_sync_finished_at", "TIMESTAMPTZ"),
    ("includes_raw", "BOOLEAN"),
    ("includes_sync_runs", "BOOLEAN"),
    ("tables", "BIGINT"),
    ("marts_published_at", "TIMESTAMPTZ"),
)


class NotRefreshable(Exception):
    """The previous snapshot is not one this version can refresh in place (another dataset,
    raw tables in it, an older `_snapshot_info`): the caller publishes it whole instead."""


@dataclass(frozen=True)
class Runs:
    """What the warehouse's `_sync_runs` says about freshness."""

    run_id: str | None = None
    """The newest run recorded, whatever its outcome."""
    run_finished_at: datetime | None = None
    last_sync_run_id: str | None = None
    """The newest run in which no table failed: the data is as of its finish."""
    last_sync_finished_at: datetime | None = None


def read_runs(con: duckdb.DuckDBPyConnection, catalog: str, dataset: str) -> Runs:
    """The newest run and the newest successful run (none of its tables failed), or empty
    `Runs` before the first run; asked of `run_state.py`, which owns `_sync_runs`."""
    state = connection_reader(con, dataset, catalog=catalog)
    newest, good = state.newest_run(), state.newest_good_run()
    return Runs(
        run_id=newest.run_id if newest else None,
        run_finished_at=newest.finished_at if newest else None,
        last_sync_run_id=good.run_id if good else None,
        last_sync_finished_at=good.finished_at if good else None,
    )


def has_runs_table(con: duckdb.DuckDBPyConnection, catalog: str, dataset: str) -> bool:
    return connection_reader(con, dataset, catalog=catalog).has_runs()


def write_info(
    con: duckdb.DuckDBPyConnection,
    alias: str,
    values: dict[str, object],
) -> None:
    """(Re)creates the one-row `_snapshot_info` in the attached snapshot `alias`; `values`
    holds every column of INFO_COLUMNS."""
    columns = ", ".join(f"{name} {kind}" for name, kind in INFO_COLUMNS)
    con.execute(f"CREATE OR REPLACE TABLE {alias}.main.{INFO_TABLE} ({columns})")
    marks = ", ".join("?" for _ in INFO_COLUMNS)
    con.execute(
        f"INSERT INTO {alias}.main.{INFO_TABLE} VALUES ({marks})",
        [values[name] for name, _ in INFO_COLUMNS],
    )


def refresh_copy(
    con: duckdb.DuckDBPyConnection,
    catalog: str,
    dataset: str,
    snapshot: Path,
    tmp: Path,
    alias: str,
    include_runs: bool,
    rebuilt: Collection[str],
) -> tuple[tuple[str, ...], str | None, tuple[str, ...]] | None:
    """Copies `snapshot` byte for byte to `tmp` (attached as `alias` on `con`, the warehouse's
    read-only connection), then copies anew the marts of the `rebuilt` models, replaces
    `_sync_runs` (or drops it without `include_runs`) and rewrites `_snapshot_info`. Returns
    the published tables, the newest run id and the marts replaced; None, `tmp` removed, when
    the previous snapshot is not a marts-only one of `dataset` in this version's layout (the
    caller then copies everything). The space of a replaced mart is reused by the next
    refresh's, so the file stays about the size of a whole copy plus the largest rebuilt."""
    try:
        shutil.copyfile(snapshot, tmp)
        con.execute(f"ATTACH {literal(str(tmp))} AS {alias} (READ_WRITE)")
        previous = _previous_info(con, alias)
        if previous.get("dataset") != dataset or previous.get("includes_raw") is not False:
            raise NotRefreshable(f"{snapshot.name} is not a marts-only snapshot of {dataset}")
        replaced = _replace_marts(con, catalog, dataset, alias, rebuilt)
        target = f"{alias}.{quote(dataset)}.{quote(RUNS_TABLE)}"
        if include_runs and has_runs_table(con, catalog, dataset):
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {alias}.{quote(dataset)}")
            con.execute(
                f"CREATE OR REPLACE TABLE {target} AS"
                f" SELECT * FROM {quote(catalog)}.{quote(dataset)}.{quote(RUNS_TABLE)}"
            )
        else:
            con.execute(f"DROP TABLE IF EXISTS {target}")
        tables = published_tables(con, alias)
        runs = read_runs(con, catalog, dataset)
        now = datetime.now(UTC)
        write_info(
            con,
            alias,
            {
                **previous,
                "published_at": now,
                **({"marts_published_at": now} if replaced else {}),
                **asdict(runs),
                "includes_sync_runs": f"{dataset}.{RUNS_TABLE}" in tables,
                "tables": len(tables),
            },
        )
        return tables, runs.run_id, replaced
    except NotRefreshable as exc:
        log.info("BI snapshot published whole: %s", exc)
        con.execute(f"DETACH DATABASE IF EXISTS {alias}")
        tmp.unlink(missing_ok=True)
        return None


def _replace_marts(
    con: duckdb.DuckDBPyConnection, catalog: str, dataset: str, alias: str, rebuilt: Collection[str]
) -> tuple[str, ...]:
    """Copies anew every relation of the warehouse's marts named in `rebuilt` (a model of
    another schema, or one that built no relation, is not published); a view becomes a table,
    as in a whole copy."""
    marts = marts_schema(dataset)
    names = [
        n for _, n in published_relations(con, catalog, dataset, include_raw=False) if n in rebuilt
    ]
    if names:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {alias}.{quote(marts)}")
    for name in names:
        con.execute(
            f"CREATE OR REPLACE TABLE {alias}.{quote(marts)}.{quote(name)} AS"
            f" SELECT * FROM {quote(catalog)}.{quote(marts)}.{quote(name)}"
        )
    return tuple(f"{marts}.{name}" for name in names)


def published_relations(
    con: duckdb.DuckDBPyConnection, catalog: str, dataset: str, *, include_raw: bool
) -> list[tuple[str, str]]:
    """(schema, name) of what is published: every table and view of the marts, and with
    `include_raw` every table of the dataset but dlt's bookkeeping (`_dlt_loads`,
    `_dlt_version`, `_dlt_pipeline_state`), which no report reads."""
    schemas = [marts_schema(dataset), *([dataset] if include_raw else [])]
    rows = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_catalog = ? AND list_contains(?, table_schema)"
        " ORDER BY table_schema, table_name",
        [catalog, schemas],
    ).fetchall()
    return [
        (str(schema), str(name))
        for schema, name in rows
        if not (schema == dataset and str(name).startswith("_dlt_"))
    ]


def _previous_info(con: duckdb.DuckDBPyConnection, alias: str) -> dict[str, object]:
    """The copied snapshot's `_snapshot_info` row, when it has every column this version writes."""
    try:
        cursor = con.execute(f"SELECT * FROM {alias}.main.{INFO_TABLE}")
    except duckdb.CatalogException:
        raise NotRefreshable(f"the previous snapshot has no {INFO_TABLE}") from None
    names = [column[0] for column in cursor.description or []]
    rows = cursor.fetchall()
    if len(rows) != 1 or set(names) != {name for name, _ in INFO_COLUMNS}:
        raise NotRefreshable(f"the previous snapshot's {INFO_TABLE} is of another version")
    return dict(zip(names, rows[0], strict=True))


def published_tables(con: duckdb.DuckDBPyConnection, alias: str) -> tuple[str, ...]:
    """`schema.table` of every data table in the attached snapshot, `_snapshot_info` aside."""
    rows = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_catalog = ? AND NOT (table_schema = 'main' AND table_name = ?)"
        " ORDER BY table_schema, table_name",
        [alias, INFO_TABLE],
    ).fetchall()
    return tuple(f"{schema}.{name}" for schema, name in rows)


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
