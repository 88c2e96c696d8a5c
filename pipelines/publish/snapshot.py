"""A read-only copy of the DuckDB warehouse for BI tools, published after each successful run.

Why: DuckDB lets one process write a file and no other process open it meanwhile, and a
process that holds the file (a read-only reader included) keeps every writer out. A BI tool
pointed at the warehouse therefore makes the next sync fail with "warehouse busy", and a running
sync locks the BI tool out. The snapshot is a second file that the sync never opens: it is
written under another name and renamed over the previous snapshot in one step, so a reader
never waits and never sees a half-written file. A reader that holds the old file keeps reading
the old file (its inode lives on until it lets go) and sees the new data when it reconnects.

What it holds: docs/bi.md, "What it contains". A publish after a partial build or a quiet run
replaces only what changed, in a copy of the previous file (`snapshot_freshness.py`).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from drone_ops_sync.sources.drone_ops import DroneOpsError

from ..run.door import read_only
from .history_macros import copy_table_macros
from .snapshot_freshness import (
    RUNS_TABLE,
    has_runs_table,
    literal,
    published_relations,
    quote,
    read_runs,
    refresh_copy,
    write_info,
)
from .snapshot_plan import marts_schema

log = logging.getLogger(__name__)

TMP_MARK = ".tmp-"
"""A snapshot being written is `<snapshot>.tmp-<pid>`: in the snapshot's folder, so the final
rename stays on one file system and is atomic."""
SPILL_SUFFIX = ".spill"
SNAPSHOT_MEMORY_LIMIT = "512MB"
"""The copy's own, after the sync has released its memory: writing DuckDB's 1.0 storage format
buffers whole row groups of text (docs/performance.md)."""
STORAGE_VERSION = "v1.0.0"
"""The DuckDB storage format the snapshot is written in. DuckDB 2.0 writes its newest format by
default, which no older DuckDB can open, and BI tools bundle their own (often older) DuckDB
driver; the 1.0 format is readable by every DuckDB from 1.0 on and holds every type we use."""
_ALIAS = "drone_sync_bi_snapshot"
"""The name the snapshot being written is attached under in the warehouse's connection."""


class SnapshotError(DroneOpsError):
    """The snapshot could not be published; the previous one, and the warehouse, are as before."""


@dataclass(frozen=True)
class SnapshotResult:
    """What one publish did: the CLI prints it and emits it as the `snapshot` JSON event."""

    path: Path
    seconds: float
    bytes: int
    tables: tuple[str, ...]
    """`schema.table` of every data table published (`_snapshot_info` not counted)."""
    run_id: str | None
    """The newest run recorded in the warehouse's `_sync_runs` (None before the first)."""
    include_raw: bool
    refreshed: bool = False
    """A copy of the previous file in which only `replaced`, `_sync_runs` and `_snapshot_info`
    were written anew."""
    replaced: tuple[str, ...] = ()
    """`schema.table` of the marts a refresh copied anew (the models rebuilt since)."""
    dashboard: Path | None = None
    """The dashboard page written beside the snapshot after it (publish/dashboard.py)."""


def publish_snapshot(
    database: Path,
    dataset: str,
    snapshot: Path,
    *,
    include_raw: bool,
    include_runs: bool = True,
    rebuilt: Collection[str] | None = None,
) -> SnapshotResult:
    """Copies the marts (and `_sync_runs` with `include_runs`, every raw table with
    `include_raw`) of `database` into a new file and renames it over `snapshot` in one step.
    With `rebuilt` (the marts are those `snapshot` was published from, but for these models,
    built since), the new file is a copy of `snapshot` in which only those marts, `_sync_runs`
    and `_snapshot_info` are written anew, unless `snapshot` cannot be refreshed so (then
    everything is copied): a partial build's publish costs what it rebuilt.

    The warehouse is opened read-only, so publishing never changes it and never waits for a BI
    tool that reads it too. The caller holds the warehouse's run lock: nothing writes the
    warehouse meanwhile, and no other publish of the same warehouse runs, so files that a killed
    publish left (`<snapshot>.tmp-*`) can be removed first. On any failure the file being
    written is removed and `snapshot` is left as it was; `SnapshotError` says why."""
    started = time.monotonic()
    snapshot = snapshot.absolute()
    if snapshot.resolve() == database.absolute().resolve():
        # the rename below would replace the warehouse with its own copy of the marts
        raise SnapshotError(f"the BI snapshot {snapshot} would replace the warehouse itself")
    folder = snapshot.parent
    tmp = folder / f"{snapshot.name}{TMP_MARK}{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        remove_leftovers(snapshot)
        # a WAL beside the snapshot holds what a read-write session wrote: the file alone is
        # not the whole snapshot, so it is not copied
        reuse = (
            rebuilt is not None
            and not include_raw
            and snapshot.is_file()
            and not _wal(snapshot).exists()
        )
        tables, run_id, replaced = _write(
            database,
            dataset,
            tmp,
            include_raw=include_raw,
            include_runs=include_runs,
            previous=snapshot if reuse else None,
            rebuilt=rebuilt or (),
        )
        _fsync(tmp)
        # a WAL beside the snapshot belongs to the old file (a read-write session left it);
        # DuckDB would replay it into the new one
        _wal(snapshot).unlink(missing_ok=True)
        os.replace(tmp, snapshot)
    except BaseException as exc:
        for leftover in (tmp, _wal(tmp)):
            leftover.unlink(missing_ok=True)
        if isinstance(exc, duckdb.Error | OSError | DroneOpsError):
            cause = str(exc) if isinstance(exc, DroneOpsError) else _cause(exc)
            raise SnapshotError(
                f"could not publish the BI snapshot {snapshot}: {cause}; the warehouse is"
                " unchanged and the previous snapshot is still in place"
            ) from None
        raise
    try:
        _fsync(folder)
    except OSError as exc:
        # published and visible; only whether the rename survives a power cut is in doubt
        log.warning("could not flush %s after publishing the BI snapshot: %s", folder, exc)
    return SnapshotResult(
        path=snapshot,
        seconds=time.monotonic() - started,
        bytes=snapshot.stat().st_size,
        tables=tables,
        run_id=run_id,
        include_raw=include_raw,
        refreshed=replaced is not None,
        replaced=replaced or (),
    )


def remove_leftovers(snapshot: Path) -> None:
    """Removes what a killed publish of `snapshot` left: `<snapshot>.tmp-<pid>`, its WAL and
    its spill folder."""
    for leftover in snapshot.parent.glob(f"{snapshot.name}{TMP_MARK}*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _write(
    database: Path,
    dataset: str,
    tmp: Path,
    *,
    include_raw: bool,
    include_runs: bool,
    previous: Path | None,
    rebuilt: Collection[str],
) -> tuple[tuple[str, ...], str | None, tuple[str, ...] | None]:
    """Writes the snapshot into `tmp` through one read-only connection on the warehouse: a
    copy of `previous` with the `rebuilt` marts replaced when given and refreshable, else a
    copy of everything. Returns the published tables, the newest run id, and the marts a
    refresh replaced (None: everything was copied)."""
    spill = tmp.with_name(tmp.name + SPILL_SUFFIX)
    config = {
        "memory_limit": SNAPSHOT_MEMORY_LIMIT,
        # a copy needs no row order; keeping it makes DuckDB buffer whole row groups, which
        # can exceed the memory limit on a large mart
        "preserve_insertion_order": False,
        # a read-only connection has no folder of its own to spill to: give it one
        "temp_directory": str(spill),
    }
    try:
        with read_only(database, config=config) as con:
            row = con.execute("SELECT current_database()").fetchone()
            catalog = str(row[0]) if row else ""
            refresh = None
            if previous is not None:
                refresh = refresh_copy(
                    con, catalog, dataset, previous, tmp, _ALIAS, include_runs, rebuilt
                )
            if refresh is None:
                tables, run_id = _copy_all(
                    con, catalog, database.name, dataset, tmp, include_raw, include_runs
                )
                replaced = None
            else:
                tables, run_id, replaced = refresh
            con.execute(f"CHECKPOINT {_ALIAS}")
            con.execute(f"DETACH {_ALIAS}")
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    if _wal(tmp).exists():
        # everything must be in the file itself: the WAL would be left behind by the rename
        raise SnapshotError(f"DuckDB left {_wal(tmp).name} after detaching the snapshot")
    return tables, run_id, replaced


def _copy_all(
    con: duckdb.DuckDBPyConnection,
    catalog: str,
    source_database: str,
    dataset: str,
    tmp: Path,
    include_raw: bool,
    include_runs: bool,
) -> tuple[tuple[str, ...], str | None]:
    """Attaches a new file at `tmp` and copies every published table into it."""
    relations = published_relations(con, catalog, dataset, include_raw=include_raw)
    if include_runs and not include_raw and has_runs_table(con, catalog, dataset):
        relations = sorted([*relations, (dataset, RUNS_TABLE)])
    runs = read_runs(con, catalog, dataset)
    con.execute(
        f"ATTACH {literal(str(tmp))} AS {_ALIAS}"
        f" (READ_WRITE, STORAGE_VERSION {literal(STORAGE_VERSION)})"
    )
    for schema in dict.fromkeys(schema for schema, _ in relations):
        con.execute(f"CREATE SCHEMA {_ALIAS}.{quote(schema)}")
    for schema, name in relations:
        # a view becomes a table: the reader has no warehouse for a view to point into
        try:
            con.execute(
                f"CREATE TABLE {_ALIAS}.{quote(schema)}.{quote(name)} AS"
                f" SELECT * FROM {quote(catalog)}.{quote(schema)}.{quote(name)}"
            )
        except duckdb.Error as exc:
            raise SnapshotError(f"copying {schema}.{name}: {_cause(exc)}") from None
    copy_table_macros(con, catalog, _ALIAS, marts_schema(dataset))
    now = datetime.now(UTC)
    write_info(
        con,
        _ALIAS,
        {
            "published_at": now,
            "marts_published_at": now,
            "source_database": source_database,
            "dataset": dataset,
            **asdict(runs),
            "includes_raw": include_raw,
            "includes_sync_runs": (dataset, RUNS_TABLE) in relations,
            "tables": len(relations),
        },
    )
    return tuple(f"{schema}.{name}" for schema, name in relations), runs.run_id


def _cause(exc: BaseException) -> str:
    """The error on one line: DuckDB's messages can span several (a query with a caret)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _fsync(path: Path) -> None:
    """Flushes a file's data, or a folder's entries (the rename), to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
