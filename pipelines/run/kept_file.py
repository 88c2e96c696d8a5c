"""The DuckDB file kept open between the steps that follow one another, until a step waits.

Why: each open of a DuckDB file reads its catalog and each close checkpoints, which costs
more CPU than the few statements of a quiet run's step or of one batch of events. DuckDB
keeps one database instance per file and process while any connection to it is open, so a
connection held here makes every connection opened meanwhile in this process (dlt's SQL
clients, its loads) a handle on that instance, opened and closed cheaply. Nothing is lent to
dlt: its clients open and close their own connections as ever.

Two holders use it, each from its own thread: a run's turn (`pipelines/session.py`), whose
steps are the known state, dlt's state sync, the record and the data version; and the event
applier (`listen/apply.py`), whose steps are its batches, and which keeps each workspace's
SQL client open with the file (`keep`: opening one again costs more than a small batch's
statements; on a server, where there is no file, the client is kept the same way and for as
long). The discipline of the file's access lock (`lock.py`) is kept: the file is held open
only with its access lock, taken by the first step, and both are let go

- at the end of any step after which another step waits for the lock (`turn_wanted`: a run's
  step, the applier, a model build, another workspace sharing the file, a reader), and, for a
  holder that rests between steps (the applier), as soon as it sees a waiter while it rests;
- at the end of the first step after `hold_seconds` of holding, when the holder sets a limit
  (the applier during a long burst: a program that does not take the lock, a notebook or a
  BI tool, still finds the file free now and then, and the write-ahead log a crash would
  leave holds a few seconds of writes at most);
- when the holder says so (`release`): a run before it waits for its walk and before its
  model build (the models' turn comes earlier in the lock order), the applier when events
  pause or a batch fails; and whenever a step raises.

A step that runs inside a lock this thread already held (a brief turn's load inside its write
turn) keeps nothing: only the outermost holder may let the lock go. On a server destination
there is no file: a step keeps only what it was asked to keep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import duckdb

from drone_ops_sync.sources.drone_ops import DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import redact

from .lock import (
    WarehouseBusy,
    access_lock_path,
    duckdb_access,
    holds_turn,
    open_duckdb,
    turn_wanted,
)

log = logging.getLogger(__name__)


class KeptFile:
    """One DuckDB file's kept connection and its access lock, and what a step opened in the
    file and asked to keep with them (`keep`), owned by one holder and used from that
    holder's thread. Its steps are the holder's outermost holds of the lock (a
    load's write turn nests inside a step, never the other way round), so letting the kept
    lock go never pulls it from under a holder. `database` None: a server destination; `busy`
    what a file another process holds raises (`lock.open_duckdb`)."""

    def __init__(
        self,
        database: Path | None,
        hold_seconds: float | None = None,
        busy: type[DroneOpsError] = WarehouseBusy,
    ) -> None:
        self.database = database
        self.hold_seconds = hold_seconds
        """The longest the file is kept through steps that follow one another; None: no limit."""
        self.busy = busy
        self._held = ExitStack()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._since: float | None = None

    @property
    def is_open(self) -> bool:
        """Whether the file's access lock is kept, with what is open in the file: a waiter
        must be looked for."""
        return self.database is not None and self._since is not None

    @contextmanager
    def step(self) -> Iterator[None]:
        """A step that opens the warehouse: inside the file's access lock, with the file held
        open (opened now unless an earlier step kept it; a file not created yet is left to
        the step). After the step what is kept stays unless it is `due` to be let go."""
        database = self.database
        nested = False
        try:
            if database is None:
                yield
            elif self.is_open:  # kept from an earlier step, with its access lock
                with duckdb_access(database):
                    yield
            elif holds_turn(access_lock_path(database)):
                nested = True  # inside a lock an outer holder lets go of: nothing is kept
                with duckdb_access(database):
                    yield
            else:
                self._held.enter_context(duckdb_access(database))
                if database.exists():
                    self._connection = open_duckdb(database, self.busy)
                    self._held.callback(self._close_connection)
                    self._kept()
                yield
        except BaseException:
            self.release()
            raise
        if nested or self._since is None or self.due():
            self.release()  # nothing kept (the lock goes with the step), or let go now

    def keep(self, close: Callable[[], None]) -> None:
        """Keeps something the step opened (a workspace's SQL client) until the file is let
        go, and `close`s it first then; on a server, until the holder releases or
        `hold_seconds` pass. Called inside a step."""
        self._held.callback(close)
        self._kept()

    def wanted(self) -> bool:
        """Whether another step waits for the file kept here."""
        database = self.database
        return self.is_open and database is not None and turn_wanted(access_lock_path(database))

    def due(self) -> bool:
        """Whether to let the file go now: a step waits for it, or it was held long enough."""
        limit, since = self.hold_seconds, self._since
        if limit is not None and since is not None and time.monotonic() - since >= limit:
            return True
        return self.wanted()

    def release(self) -> None:
        """Closes the kept connection, then lets the file's access lock go. A close that
        fails (a full disk during DuckDB's checkpoint) is logged, not raised over the error
        the holder may be ending with: the file keeps its write-ahead log, which the next
        open replays, and the lock is let go all the same."""
        held, self._held, self._since = self._held, ExitStack(), None
        try:
            held.close()
        except Exception as exc:
            log.warning("closing the warehouse file failed: %s", redact(str(exc))[:300])

    def _kept(self) -> None:
        if self._since is None:
            self._since = time.monotonic()

    def _close_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
