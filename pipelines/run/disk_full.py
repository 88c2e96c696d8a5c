"""A full disk, wherever a turn writes: one line that names the folder to free, and the run
stops at once with nothing half-done left in dlt's working folder.

Why: once a load is refused every later one is too, and each failure came back through dlt as
a different error (`errors.chained`). So the first refused load ends the run: its unloaded
packages and dlt's unfinished saves are deleted, nothing more is written, and the next run
with space loads what this one could not.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dlt

from drone_ops_sync.sources.drone_ops import DroneOpsError

from .errors import chained, full_path, is_disk_full
from .recovery import drop_unloaded
from .target import Target


class DiskFull(DroneOpsError):
    """The disk refused a write; the message names the folder to free."""


@contextmanager
def disk_full_as_error(target: Target, pipeline: dlt.Pipeline | None = None) -> Iterator[None]:
    """Turns a full disk, raised anywhere in the block, into `DiskFull`; with `pipeline`, first
    deletes what the refused load left in its working folder."""
    try:
        yield
    except DroneOpsError:
        raise
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        if pipeline is not None:
            drop_unloaded(pipeline)
        database = target.duckdb_file()
        if database is not None:
            _remove_unwritten_database(database)
        raise disk_full_error(target, exc) from None


DUCKDB_MAGIC = b"DUCK"
"""Bytes 8-11 of every DuckDB file (after its main header's checksum)."""
DUCKDB_HEADERS_BYTES = 3 * 4096
"""A DuckDB file starts with its main header and two database headers, written on creation."""


def _remove_unwritten_database(database: Path) -> None:
    """Removes a DuckDB file this run created and the disk refused to write whole: every later
    run would refuse it as "not a valid DuckDB database file". A file the run found was opened
    before anything was written, and DuckDB rewrites headers in place, so only a file this run
    created can be shorter than them or lack the magic bytes."""
    try:
        with database.open("rb") as file:
            head = file.read(DUCKDB_HEADERS_BYTES)
    except FileNotFoundError:
        return
    if len(head) < DUCKDB_HEADERS_BYTES or head[8:12] != DUCKDB_MAGIC:
        database.unlink(missing_ok=True)
        database.with_name(database.name + ".wal").unlink(missing_ok=True)


def disk_full_error(target: Target, exc: BaseException) -> DiskFull:
    """The one line for a full disk: which folder, and what to do. A database server's full
    disk (its error, no OS error of this machine behind it) is the server's to free."""
    local = any(isinstance(error, OSError) for error in chained(exc))
    if target.destination != "duckdb" and not local:
        where = f"on the {target.destination} server's disk"
    else:
        folder, role = _full_folder(target, full_path(exc))
        where = f"in {folder} ({role})"
    return DiskFull(
        f"no space left on device {where}: free space there and run again; the run stopped at"
        " the first write the disk refused, left nothing half-loaded, and the next run loads"
        " the rest"
    )


def _folders(target: Target) -> list[tuple[Path, str]]:
    """The folders a turn writes, each with what it is, most specific first."""
    folders = [
        (target.resolved_pipelines_dir(), "dlt's pipelines folder"),
        (target.sync_dir(), "the sync's spill and dbt folder"),
    ]
    if target.destination == "duckdb":
        folders.append((target.resolved_database().resolve().parent, "the DuckDB file's folder"))
    folders.append((Path(tempfile.gettempdir()), "the temporary folder"))
    return folders


def _full_folder(target: Target, path: str | None) -> tuple[Path, str]:
    """The folder a refused write went to: the known folder holding the path the error named,
    else the known folder with the least free space (a write whose error names no file)."""
    folders = _folders(target)
    if path is not None:
        refused = Path(path).absolute()
        for folder, role in folders:
            if refused.is_relative_to(folder.absolute()):
                return folder, role
        return refused.parent, "the folder of the file the disk refused"
    return min(folders, key=lambda item: _free_bytes(item[0]))


def _free_bytes(folder: Path) -> int:
    """Free bytes on the file system holding `folder` (or its nearest existing parent)."""
    for candidate in (folder, *folder.parents):
        try:
            stats = os.statvfs(candidate)
        except OSError:
            continue
        return stats.f_bavail * stats.f_frsize
    return 0
