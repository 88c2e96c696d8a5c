"""One run per warehouse, and a clear word when another program holds the DuckDB file.

The lock is an advisory `flock` on a file beside the warehouse (`<warehouse>.lock`). The
kernel drops it when its holder dies, however it dies, so a lock left by a killed run is never
in the way: the file still names the dead holder, and the next run says it took over. The file
is never deleted (deleting it would let a waiting run and a new one each lock a different
file), only emptied on release.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import duckdb

from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError


class WarehouseBusy(DroneOpsError):
    """Another run holds the warehouse's lock, or another process holds the DuckDB file."""


BRIEF_WAIT_SECONDS = 5.0
"""How long a run waits for a brief holder (the receiver applying one batch of events, which
takes well under a second) before it says busy."""
_BRIEF_POLL_SECONDS = 0.02
_NOTED_WAIT_SECONDS = 0.05
"""A wait for a brief holder at least this long is noted in the run's summary."""


@contextmanager
def warehouse_lock(
    lock_path: Path, notes: list[str] | None = None, *, brief: bool = False
) -> Iterator[None]:
    """Holds the run lock for `lock_path`, or raises `WarehouseBusy` naming the holder.

    A lock file naming a holder that no longer holds it (a killed run) is taken over, and a
    note saying so is appended to `notes`. Taken once per run, by whoever starts the run
    (`drone-sync run` holds it across the sync and the model build); a second take, even in
    the same process, is refused like any other. A `brief` holder (the event applier: one
    batch, then release) is waited for up to `BRIEF_WAIT_SECONDS` instead, so a scheduled run
    that starts during a batch is delayed by that batch, never refused."""
    key = lock_path.resolve()
    key.parent.mkdir(parents=True, exist_ok=True)
    if brief and _run_waiting(key):
        raise WarehouseBusy(f"a run is waiting for {key}; the brief holder gives it the turn")
    handle = open(key, "a+", encoding="utf-8")  # noqa: SIM115 (held until release below)
    try:
        waited = _take(handle, key)
        if waited >= _NOTED_WAIT_SECONDS and notes is not None:
            notes.append(f"waited {waited:.1f} s for the event receiver's batch to finish")
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
                    **({"brief": True} if brief else {}),
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


def _take(handle: IO[str], key: Path) -> float:
    """Takes the lock, waiting while (and only while) a brief holder has it; returns how long
    it waited. While it waits, a `<lock>.waiting` file tells brief takers to let it go first
    (the receiver's next batch would otherwise take the lock straight back)."""
    started = time.monotonic()
    deadline = started + BRIEF_WAIT_SECONDS
    waiting = _waiting_path(key)
    announced = False
    try:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return time.monotonic() - started
            except BlockingIOError:
                holder = _read_holder(handle)
                # an empty file: the holder has just taken it and is writing who it is
                if (holder.get("brief") or not holder) and time.monotonic() < deadline:
                    if not announced:
                        # once: it stays fresh for the whole wait (`_run_waiting`'s bound)
                        waiting.write_text(str(os.getpid()), encoding="utf-8")
                        announced = True
                    time.sleep(_BRIEF_POLL_SECONDS)
                    continue
                raise WarehouseBusy(
                    f"another drone-sync run ({_describe(holder)}) holds {key}; wait for it to"
                    " finish, or stop that process, then run again"
                ) from None
    finally:
        if announced:
            waiting.unlink(missing_ok=True)


def _waiting_path(key: Path) -> Path:
    return key.with_name(key.name + ".waiting")


def _run_waiting(key: Path) -> bool:
    """Whether a run is waiting for a brief holder to finish (a file younger than the
    longest wait: one a killed waiter left is ignored after that)."""
    try:
        age = time.time() - _waiting_path(key).stat().st_mtime
    except OSError:
        return False
    return age < BRIEF_WAIT_SECONDS


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


_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def duckdb_holder(error: BaseException) -> str | None:
    """Who holds a DuckDB file, from DuckDB's cross-process lock error ("PID n, program", or
    "another process" when DuckDB did not say); None if `error` is another error."""
    match = _HOLDER.search(str(error))
    if match is None and "Could not set lock on file" not in str(error):
        return None
    return f"PID {match['pid']}, {match['program']}" if match else "another process"


def busy_message(database: Path, error: BaseException) -> str | None:
    """The one line for DuckDB's cross-process lock error, or None if `error` is another."""
    holder = duckdb_holder(error)
    if holder is None:
        return None
    return (
        f"{database} is open in another process ({holder}); DuckDB lets no"
        " other process write while a program (a BI tool, a notebook, DBeaver, even a"
        " read-only one) holds the file: close it or disconnect it there, then run again"
    )


def ensure_duckdb_free(database: Path) -> None:
    """Raises `WarehouseBusy` when another process holds the DuckDB file, before a run
    changes anything (the run's own open would fail the same way, but deep inside dlt)."""
    if not database.exists():
        return
    try:
        duckdb.connect(str(database)).close()
    except duckdb.Error as exc:
        message = busy_message(database, exc)
        if message is None:
            raise ConfigError(
                "--database / destination.duckdb.credentials",
                f"{database} cannot be opened as a DuckDB database ({exc})",
            ) from None
        raise WarehouseBusy(message) from None
