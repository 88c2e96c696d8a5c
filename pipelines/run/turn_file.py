"""The DuckDB file kept open across the steps of a turn that follow one another.

Why: a quiet `small` run opened the file six times (the check that it is free, the repairs'
check, the known state, dlt's state sync, the record's SQL write, the data version), and each
open reads DuckDB's catalog and each close checkpoints: about 20-30 ms of CPU each. DuckDB
keeps one database instance per file and process while any connection to it is open, so a
connection held here makes every connection dlt opens meanwhile (its SQL clients, its loads)
a handle on that instance, opened and closed in well under a millisecond. Nothing is lent to
dlt: its clients open and close their own connections exactly as before.

The discipline of the file's access lock (`lock.py`) is kept: the file is held open only with
its access lock, taken by the first step; it is let go

- at the end of any step after which another step waits for the lock (`turn_wanted`: the
  event receiver's applier, another workspace's run sharing the file), so a waiter gets the
  file between the turn's steps as it did when each step opened and closed the file;
- before the run waits for its walk (`run/sync.py`: the known state is read, then the file is
  let go; the record and the data version, which follow each other, take it again), so a walk
  of any length never keeps the file from anyone;
- before the turn's model build and snapshot (which take the models lock, earlier in the lock
  order) and when the turn ends, however it ends.

A step that runs inside a lock this thread already held (a brief turn's load inside its write
turn) keeps nothing: only the outermost holder may let the lock go. On a server destination
there is no file, and a step is only what it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import duckdb

from drone_ops_sync.sources.drone_ops.internal import redact

from .lock import access_lock_path, duckdb_access, holds_turn, open_duckdb, turn_wanted
from .target import Target

log = logging.getLogger(__name__)


class TurnFile:
    """The turn's one DuckDB connection and the file's access lock with it; owned by the
    turn (`pipelines/session.py` `Session`), used from the turn's own thread. Its steps are
    the turn's outermost holds of the lock (a load's write turn nests inside a step, never
    the other way round), so letting the kept lock go never pulls it from under a holder."""

    def __init__(self, target: Target) -> None:
        self.database = target.duckdb_file()
        self._held = ExitStack()
        self._connection: duckdb.DuckDBPyConnection | None = None

    @property
    def is_open(self) -> bool:
        return self._connection is not None

    @contextmanager
    def step(self) -> Iterator[None]:
        """A step that opens the warehouse: inside the file's access lock, with the file held
        open (opened now unless an earlier step kept it; a file not created yet is left to
        the step). After the step the file stays open unless a step waits for it."""
        database = self.database
        if database is None:
            yield
            return
        if self._connection is not None or holds_turn(access_lock_path(database)):
            # kept from an earlier step, or inside a lock an outer holder lets go of
            try:
                with duckdb_access(database):
                    yield
            except BaseException:
                self.release()
                raise
            self._release_if_wanted()
            return
        held = ExitStack()
        try:
            held.enter_context(duckdb_access(database))
            if database.exists():
                self._connection = open_duckdb(database)
                held.callback(self._close_connection)
            yield
        except BaseException:
            self._held = held
            self.release()
            raise
        self._held = held
        self._release_if_wanted()

    def release(self) -> None:
        """Closes the turn's connection, then lets the file's access lock go. A close that
        fails (a full disk during DuckDB's checkpoint) is logged, not raised over the error
        the turn is ending with: the file keeps its write-ahead log, which the next open
        replays, and the lock is let go all the same."""
        held, self._held = self._held, ExitStack()
        try:
            held.close()
        except Exception as exc:
            log.warning("closing the warehouse file failed: %s", redact(str(exc))[:300])

    def _release_if_wanted(self) -> None:
        if self.database is not None and turn_wanted(access_lock_path(self.database)):
            self.release()
        elif self._connection is None:
            self.release()  # nothing kept open: the lock goes with the step

    def _close_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
