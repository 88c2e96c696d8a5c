"""Every lock of a warehouse, on one primitive (`take_flock`), in the order they are taken.

All are advisory `flock`s: the kernel drops one when its holder dies, however it dies, so a
lock a killed process left is never in the way. In the order a holder takes them (a holder of
a later one never waits for an earlier one, so no two holders can wait for each other):

1. the spool folder (`drone-sync listen` only, for the receiver's life: `listen/spool.py`);
2. the run lock, `<warehouse>.lock` (`warehouse_lock`): one turn of a workspace at a time,
   taken by `pipelines/session.py` and nowhere else; refused at once when another turn holds
   it (the event receiver never takes it);
3. the models lock (`door.models_lock`): one model build of a warehouse at a time,
   waited for. On a server it is `models.lock` in the warehouse's sync folder; on DuckDB it is
   the file's access lock (4) itself, held for the whole build, so no lock file of its own;
4. the write lock (`Target.write_lock`, `reentrant_lock`): on DuckDB the file's access lock,
   `<file>.access.lock` (`access_lock`), held by every step while it has the file open; on a
   server `<run lock>.write`, held by each load. Waited for, re-entrant per thread, so the
   workspaces sharing a file (a fleet, Dagster partitions) write one at a time while their walks
   overlap, and the event receiver writes a batch between a run's loads.

A step that has to wait for a lock (3, 4) says so while it waits: it shares a `flock` on
`<lock>.want` beside it (`waited_lock`), which a holder that keeps the DuckDB file between uses
(`door.py` `KeptFile`) asks (`lock_wanted`) to hand it over at once; a waiter that dies drops
its share with it. The run lock is never waited for, so it has no `.want`. So a DuckDB
warehouse has three lock files: `<file>.lock` (one per workspace: `<file>.<dataset>.lock` for a
named one), `<file>.access.lock` and `<file>.access.lock.want`.

The run lock file is never deleted (deleting it would let a run that opened it just before
and a new one each lock a different file), only emptied on release; it names its holder, so
the next run can say whose lock it took over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from drone_ops_sync.sources.drone_ops import DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import file_lock


class WarehouseBusy(DroneOpsError):
    """Another run holds the warehouse's lock, or another process holds the DuckDB file."""


ACCESS_WAIT_SECONDS = 1800.0
"""How long a step waits for the models lock or the file's access lock before giving up as
busy (exit 75): longer than any one load of the largest workspace measured here, shorter than
a schedule's interval."""
_POLL_SECONDS = 0.02
_held = threading.local()


def take_flock(fd: int, keep_waiting: Callable[[], bool] = lambda: False) -> bool:
    """The one way a lock is taken: an exclusive `flock` on `fd`, tried without blocking and
    tried again every few milliseconds for as long as `keep_waiting()` says so. Returns whether
    it took the lock (False: it gave up, and the caller says who holds it)."""
    while not file_lock.try_lock(fd):
        if not keep_waiting():
            return False
        time.sleep(_POLL_SECONDS)
    return True


@contextmanager
def warehouse_lock(lock_path: Path, notes: list[str] | None = None) -> Iterator[None]:
    """Holds the run lock for `lock_path`, or raises `WarehouseBusy` naming the holder.

    A lock file naming a holder that no longer holds it (a killed run) is taken over, and a
    note saying so is appended to `notes`. A second take, even in the same process, is
    refused at once like any other."""
    key = lock_path.resolve()
    key.parent.mkdir(parents=True, exist_ok=True)
    handle = open(key, "a+", encoding="utf-8")  # noqa: SIM115 (held until release below)
    try:
        if not take_flock(handle.fileno()):
            raise WarehouseBusy(
                f"another drone-sync run ({_describe(_read_holder(handle))}) holds {key}; wait"
                " for it to finish, or stop that process, then run again"
            )
        previous = _read_holder(handle)
        if previous and notes is not None:
            notes.append(
                "took over the lock left by a run that ended without releasing it"
                f" ({_describe(previous)})"
            )
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
            )
        )
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
    finally:
        handle.close()


def _read_holder(handle: IO[str]) -> dict[str, Any]:
    handle.seek(0)
    try:
        holder = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "pid unknown"
    return (
        f"pid {holder.get('pid', '?')} on {holder.get('host', '?')},"
        f" started {holder.get('started_at', '?')}"
    )


@contextmanager
def waited_lock(path: Path, wait_seconds: float, what: str) -> Iterator[None]:
    """Holds the lock on `path` for the block, waiting up to `wait_seconds` for it;
    `WarehouseBusy` (exit 75) naming `what` if the wait runs out."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait_seconds
        taken = take_flock(handle.fileno())
        if not taken:
            with _wanting(path):
                taken = take_flock(handle.fileno(), lambda: time.monotonic() < deadline)
        if not taken:
            raise WarehouseBusy(
                f"waited {wait_seconds:g} s for {what} ({path}): another step held it"
                " the whole time; run again later"
            )
        try:
            yield
        finally:
            file_lock.unlock(handle.fileno())


def _want_path(path: Path) -> Path:
    return path.with_name(path.name + ".want")


@contextmanager
def _wanting(path: Path) -> Iterator[None]:
    """Shares the lock on `<path>.want` for the block: the waiter's sign to a holder that
    keeps its lock between uses (`lock_wanted`). Taken blocking: `lock_wanted` holds it
    exclusively for two system calls only. The file is never deleted, so every waiter and
    every holder meet on one inode."""
    with open(_want_path(path), "a", encoding="utf-8") as want:
        file_lock.lock(want.fileno(), shared=True)
        yield


def holds_lock(path: Path) -> bool:
    """Whether this thread holds the lock on `path` (`reentrant_lock`)."""
    depth: dict[str, int] = getattr(_held, "depth", None) or {}
    return bool(depth.get(str(path.resolve())))


def lock_wanted(path: Path) -> bool:
    """Whether another step waits for the lock on `path` (`waited_lock` shares `<path>.want`
    while it waits): a holder that keeps the lock between uses then hands it over."""
    try:
        fd = os.open(_want_path(path), os.O_RDONLY)
    except FileNotFoundError:
        return False  # nobody has ever waited for this lock
    try:
        return not file_lock.try_lock(fd)
    finally:
        os.close(fd)  # closing drops the probe's own lock, if it took it


def access_lock_path(database: Path) -> Path:
    """The DuckDB file's access lock: `<file>.access.lock`, beside the file."""
    return Path(str(database.resolve()) + ".access.lock")


@contextmanager
def access_lock(database: Path | None) -> Iterator[None]:
    """Holds the DuckDB file's access lock for the block, held by every step that opens the
    file, so the workspaces sharing it open it one step at a time; a no-op for a server
    destination (None)."""
    if database is None:
        yield
        return
    with reentrant_lock(access_lock_path(database), "the DuckDB file"):
        yield


@contextmanager
def reentrant_lock(path: Path, what: str) -> Iterator[None]:
    """`waited_lock` that a thread already holding it takes again without waiting (the steps
    nest: a run's repairs load pending packages, a load inside a batch's write lock). Each first
    taking opens its own descriptor, so it excludes other threads of the same process as well
    as other processes."""
    key = str(path.resolve())
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
        with waited_lock(path, ACCESS_WAIT_SECONDS, what):
            yield
    finally:
        depth[key] = 0
