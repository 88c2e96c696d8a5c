"""One process at a time inside a DuckDB file, so the workspaces of a fleet can share it.

DuckDB lets one process open a file for writing, and no other process open it at all
meanwhile. Several workspaces syncing into one file (`drone-sync run` with workspaces, or
Dagster running one process per workspace) would each fail with DuckDB's lock error at their
first load. So every step that opens the file (repairs, reading what the warehouse holds,
each load, recording the run, the model build) takes this lock for as long as it has the
file open, and waits for it rather than failing: the walks, which need only the API, overlap,
and the loads take turns (docs/fleet.md has the measurements).

The lock is an advisory `flock` on `<file>.access.lock`: each taking opens its own descriptor,
so it excludes other threads of the same process as well as other processes, and the kernel
drops it when its holder dies. A thread that already holds it takes it again without waiting
(the steps nest: a run's repairs load pending packages). PostgreSQL needs none of this: there,
workspaces load in parallel, each into its own schema.
"""

from __future__ import annotations

import fcntl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .lock import WarehouseBusy

ACCESS_WAIT_SECONDS = 1800.0
"""How long a step waits for its turn before giving up as busy (exit 75): longer than any
one load of the largest workspace measured here, shorter than a schedule's interval."""
_POLL_SECONDS = 0.05
_held = threading.local()


@contextmanager
def duckdb_access(
    database: Path | None, wait_seconds: float = ACCESS_WAIT_SECONDS
) -> Iterator[None]:
    """Holds the file's access lock for the block; a no-op for a server destination (None)."""
    if database is None:
        yield
        return
    key = str(database.resolve())
    depth: dict[str, int] = getattr(_held, "depth", None) or {}
    _held.depth = depth
    if depth.get(key):
        depth[key] += 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    depth[key] = 1
    try:
        with waiting_turn(Path(key + ".access.lock"), wait_seconds, "the DuckDB file"):
            yield
    finally:
        depth[key] = 0


@contextmanager
def waiting_turn(path: Path, wait_seconds: float, what: str) -> Iterator[None]:
    """Holds an advisory `flock` on `path` for the block, waiting up to `wait_seconds` for
    it; `WarehouseBusy` (exit 75) naming `what` if the wait runs out."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusy(
                        f"waited {wait_seconds:g} s for {what} ({path}): another step held it"
                        " the whole time; run again later"
                    ) from None
                time.sleep(_POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
