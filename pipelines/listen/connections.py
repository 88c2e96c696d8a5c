"""The event applier's warehouse connections, kept open while batches keep coming.

Why: at `tenth`, opening the DuckDB file and closing it again (DuckDB reads its catalog on open
and checkpoints on close) cost about 35 ms of CPU per batch, more than writing the batch: at 50
events/s and a batch a second, 0.7 ms per event. So between batches the applier keeps each
workspace's SQL client open and, on DuckDB, keeps the file's access lock with it, since no other
step may open the file meanwhile (`run/lock.py`). It lets both go:

- as soon as another step waits for the file's access lock (a run's load, a model build, a
  reader: `turn_wanted`), asked after each batch and every `WANT_POLL_SECONDS` between
  batches: that step waits for the batch in progress and the close, as it waited for the batch
  before;
- when a tick finds nothing to apply: while events are quiet the file is free, also for
  programs that do not take the lock (a notebook, a BI tool on the raw file);
- at the end of the first batch after `HOLD_SECONDS` of holding: during a long burst such a
  program still finds the file free between two ticks, and the write-ahead log a crash would
  leave (replayed by the next open) holds a few seconds of batches at most;
- when a batch fails, and when the receiver stops.

On a server (PostgreSQL) there is no file to hand over: the connection is kept the same way, and
each batch still takes the dataset's write turn (`Target.write_turn`), which each of a run's
loads holds too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from dlt.destinations.sql_client import SqlClientBase

from drone_ops_sync.sources.drone_ops.internal import redact

from ..run.lock import access_lock_path, turn_wanted
from ..run.recovery import open_pipeline
from ..run.target import Target

HOLD_SECONDS = 10.0
"""The longest the applier keeps the DuckDB file through a burst before it closes it once."""
WANT_POLL_SECONDS = 0.02
"""How often the resting applier asks whether another step waits for the file."""

log = logging.getLogger(__name__)


class KeptConnections:
    """Each workspace's SQL client, made once (making it resolves dlt's configuration, about
    70 ms of CPU), opened for a batch and, with `keep`, kept open between batches until one of
    the reasons above. One thread uses it, the applier's: the file's access lock is re-entrant
    per thread (`run/lock.py`), so a batch's own write turn passes through the one kept here.
    Without `keep` every batch closes what it opened (callers that apply one batch)."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self._clients: dict[str, SqlClientBase[Any]] = {}
        self._open: set[str] = set()
        self._held = ExitStack()
        """The access locks taken, then each open connection's close: closed in reverse."""
        self._locks: list[Path] = []
        self._since: float | None = None

    @property
    def holds_file(self) -> bool:
        """Whether a DuckDB file's access lock is kept (so a waiter must be looked for)."""
        return bool(self._locks)

    @contextmanager
    def batch(self, target: Target) -> Iterator[SqlClientBase[Any]]:
        """The workspace's open SQL client inside its write turn, for one batch; whatever the
        batch raises closes everything first."""
        try:
            self._hold_file(target)
            with target.write_turn():
                yield self._opened(target)
        except BaseException:
            self.release()
            raise
        if not self.keep or self.due():
            self.release()

    def due(self) -> bool:
        """Whether to let go now: another step waits for the file, or it was held long."""
        if self._since is not None and time.monotonic() - self._since >= HOLD_SECONDS:
            return True
        return self.wanted()

    def wanted(self) -> bool:
        """Whether another step waits for a file kept here."""
        return any(turn_wanted(lock) for lock in self._locks)

    def release(self) -> None:
        """Closes every kept connection, then lets the file's access lock go. A close that
        fails (a full disk during DuckDB's checkpoint) is logged: the file keeps its
        write-ahead log, which the next open replays, and the lock is let go all the same."""
        held, self._held = self._held, ExitStack()
        self._locks, self._open, self._since = [], set(), None
        try:
            held.close()
        except Exception as exc:
            log.warning("closing the warehouse after events failed: %s", redact(str(exc))[:300])

    def _hold_file(self, target: Target) -> None:
        database = target.duckdb_file()
        if database is None:
            return
        lock = access_lock_path(database)
        if lock not in self._locks:
            self._held.enter_context(target.file_access())
            self._locks.append(lock)

    def _opened(self, target: Target) -> SqlClientBase[Any]:
        workspace = target.workspace
        if workspace not in self._clients:
            self._clients[workspace] = open_pipeline(target)[0].sql_client()
        client = self._clients[workspace]
        if workspace not in self._open:
            client.open_connection()
            self._held.callback(client.close_connection)
            self._open.add(workspace)
            if self._since is None:
                self._since = time.monotonic()
        return client
