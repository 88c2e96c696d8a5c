"""Spooled events into the warehouse within seconds (docs/events.md, "Applying events").

A thread of `drone-sync listen` reads the spool from where it last applied, every
`--apply-every` seconds, and writes the batch into each workspace's dataset in one SQL
transaction (`write.py`), taking only the dataset's write lock, which a run holds only during
each of its loads, so events land between a run's loads rather than after the run. A batch the
transaction cannot write as dlt would (a workspace not synced yet, a column its tables lack)
waits in the spool until a run has made the tables (`NotSyncedYet`): schema evolution is the
runs' alone, and the run reads the API's truth anyway.

How far the spool is applied is `applied.json` beside it, written after the batch committed;
a crash between the two applies the batch again, which is harmless (a held version is not
newer, `_webhook_events` is merged on `delivery_id`). A batch that cannot be applied now stays
in the spool for the next tick; a record that never can be is quarantined (`quarantine.py`),
so it cannot hold back the ones after it. The batch run repairs whatever events miss.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dlt.destinations.exceptions import DatabaseUndefinedRelation
from dlt.destinations.sql_client import SqlClientBase

from drone_ops_sync.sources.drone_ops import DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import (
    UNROUTED,
    ReceivedEvent,
    configured_names,
    redact,
)

from ..run.door import KeptFile, duckdb_busy_as
from ..run.durable import replace_durably
from ..run.lock import WarehouseBusy
from ..run.recovery import open_pipeline
from ..run.target import Target
from .marts import MartsFollower
from .quarantine import Quarantine, sort_lines
from .spool import Position, Spool, read_from
from .write import write_batch

APPLIED_FILE = "applied.json"
MAX_BATCH_BYTES = 8 * 1024 * 1024
"""At most this much spool per batch, so a backlog is applied in bounded steps."""

BACKLOG_BYTES = MAX_BATCH_BYTES // 2
"""A batch at least this large means the spool holds more: the next is applied at once."""
HOLD_SECONDS = 10.0
"""The longest the applier keeps the DuckDB file through a burst before it lets it go once."""
WANT_POLL_SECONDS = 0.02
"""How often the resting applier asks whether another step waits for the file."""

log = logging.getLogger(__name__)


class AppliedMark:
    """How far the spool is applied: a segment, a byte offset in it and the lines before it,
    in `applied.json`, replaced atomically. Naming the segment keeps the mark valid when
    older segments are removed; a missing or unreadable mark starts at the oldest segment
    (applying again is harmless, as after a crash)."""

    def __init__(self, spool_dir: Path) -> None:
        self.path = spool_dir / APPLIED_FILE

    def load(self) -> Position:
        try:
            saved = json.loads(self.path.read_text())
            return Position(int(saved["segment"]), int(saved["offset"]), int(saved["line"]))
        except (OSError, ValueError, KeyError, TypeError):
            return Position()

    def save(self, position: Position) -> None:
        replace_durably(self.path, json.dumps({**asdict(position), "saved_at": time.time()}))


class Router:
    """Each event's workspace: the only one when one is configured; otherwise the one whose
    synced delivery logs carry the event's `workspace_id` (learned by the batch runs). The
    ids are read from the warehouse once, and again only when an event names an id not seen
    yet (a workspace's first run may have brought it), not for every batch."""

    def __init__(self, base: Target, *, keep_open: bool = False) -> None:
        self.base = base
        self.owners: dict[str, str] = {}
        self.file = KeptFile(base.duckdb_file(), HOLD_SECONDS if keep_open else 0.0, FileHeld)
        """The DuckDB file the workspaces share; with `keep_open` (the applier) kept open
        between batches (`run/door.py`), else let go after each batch."""
        self._clients: dict[str, SqlClientBase[Any]] = {}
        self._open: set[str] = set()

    @contextmanager
    def opened(self, target: Target) -> Iterator[SqlClientBase[Any]]:
        """The workspace pipeline's SQL client, open, inside a step of the kept file: made
        once (making it resolves dlt's configuration), opened once and kept open with the
        file (`KeptFile.keep`), since opening it again for each batch costs more than a
        small batch's statements."""
        workspace = target.workspace
        if workspace not in self._clients:
            self._clients[workspace] = open_pipeline(target)[0].sql_client()
        client = self._clients[workspace]
        if workspace not in self._open:
            client.open_connection()
            self._open.add(workspace)
            self.file.keep(lambda: self._close(workspace))
        yield client

    def _close(self, workspace: str) -> None:
        self._open.discard(workspace)
        self._clients[workspace].close_connection()

    def route(self, events: Sequence[ReceivedEvent]) -> dict[str, list[ReceivedEvent]]:
        """The events by workspace; those of no known workspace under `UNROUTED`."""
        names = configured_names()
        if len(names) == 1:
            return {names[0]: list(events)} if events else {}
        if any((received.workspace_id or "") not in self.owners for received in events):
            self.owners = self._workspace_ids(names)
        routed: dict[str, list[ReceivedEvent]] = {}
        for received in events:
            owner = self.owners.get(received.workspace_id or "", UNROUTED)
            routed.setdefault(owner, []).append(received)
        return routed

    def _workspace_ids(self, names: Sequence[str]) -> dict[str, str]:
        """The API's workspace id of each configured workspace, from its delivery logs.

        A workspace without delivery logs yet (not synced) teaches nothing and is skipped. Any
        other failure to read (a file another process holds, a dropped connection, a refused
        login) is raised: the batch then stays in the spool and is tried again, its error
        shown by `/health`, where skipping would count its events unrouted and move the mark
        past them."""
        owners: dict[str, str] = {}
        for name in names:
            target = self.base.for_workspace(name)
            try:
                with self.file.step(), self.opened(target) as client:
                    rows = client.execute_sql(
                        "SELECT DISTINCT workspace_id FROM"
                        f" {client.make_qualified_table_name('webhook_deliveries')}"
                    )
            except DatabaseUndefinedRelation:
                continue
            owners.update({str(row[0]): name for row in rows or () if row[0] is not None})
        return owners


def apply_batch(router: Router, events: Sequence[ReceivedEvent]) -> dict[str, int]:
    """Loads one batch into each event's workspace; returns how many events had each outcome.
    Raises `WarehouseBusy` when a run holds a workspace and `NotSyncedYet` before its tables
    exist (the batch is then tried again)."""
    counts: Counter[str] = Counter()
    base = router.base
    for name, batch in router.route(events).items():
        if name == UNROUTED:
            counts[UNROUTED] += len(batch)
            log.warning(
                "%d events of workspace ids %s belong to no configured workspace: not applied",
                len(batch),
                sorted({e.workspace_id or "?" for e in batch}),
            )
            continue
        counts.update(_apply_to(router, base.for_workspace(name), batch))
    return dict(counts)


def _apply_to(router: Router, target: Target, batch: Sequence[ReceivedEvent]) -> dict[str, int]:
    """One workspace's batch: one SQL transaction under the dataset's short write lock
    (`Target.write_lock`, the lock each load of a run takes too), not the run lock, so a
    scheduled run holds events back only while one of its loads writes. A batch that
    transaction cannot write as dlt would raises `NotSyncedYet`, having written nothing."""
    with (
        duckdb_busy_as(target.duckdb_file(), FileHeld),
        router.file.step(),
        target.write_lock(),
        router.opened(target) as client,
    ):
        outcomes = write_batch(client, batch)
    if outcomes is None:
        raise NotSyncedYet(
            f"workspace {target.workspace!r} has no synced tables yet (or lacks a column these"
            " events carry): its events wait in the spool until its next `drone-sync run`"
        )
    return dict(Counter(outcomes.values()))


class FileHeld(DroneOpsError):
    """Another program (a BI tool, a notebook) holds the DuckDB file: the batch waits."""


class NotSyncedYet(DroneOpsError):
    """The workspace's warehouse lacks `projects` or `_webhook_events`, or a column the batch
    carries: the batch waits in the spool. Only a run makes tables and columns (dlt evolves the
    schema as it loads the API's rows); once it has, the waiting batch is written as any other,
    newest-wins against what the run loaded, so no version goes back."""


@dataclass
class ApplierStats:
    """What `/health` shows of the applier."""

    applied: int = 0
    batches: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    segment: int = 0
    offset: int = 0
    quarantined: int = 0


class Applier:
    """The thread that applies the spool every `interval` seconds until stopped; it also
    removes the segments it has wholly applied, through the spool (their owner)."""

    def __init__(self, base: Target, spool: Spool, interval: float) -> None:
        self.router = Router(base, keep_open=True)
        self.spool = spool
        self.mark = AppliedMark(spool.directory)
        self.quarantine = Quarantine(spool.directory)
        self.interval = interval
        self.follower: MartsFollower | None = None
        """Told after each batch that applied project versions (`marts.py`); None: off."""
        self.position = self.mark.load()
        newest = spool.active_segment
        if self.position.segment > newest:  # the segments were removed by hand, not the mark
            log.warning(
                "applied.json names segment %d past the newest: applying from the start",
                self.position.segment,
            )
            self.position = Position()
        self.stats = ApplierStats(quarantined=len(self.quarantine))
        self._show(self.position)
        # a crash between a mark and its removal left applied segments: remove them now
        self.spool.release(self.position.segment)
        self._backlog = False
        self._idle = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="event-applier", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Ends the loop after the batch in progress (whose load then completes)."""
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        kept = self.router.file
        try:
            while not self._rest():
                try:
                    # again at once only while a backlog remains: a batch per interval
                    # otherwise, since each batch pays a fixed cost (its queries, a commit)
                    while self._tick_between_builds() and self._backlog and not self._stop.is_set():
                        pass
                except Exception as exc:  # a batch failed: it stays in the spool for next tick
                    kept.release()
                    self.stats.last_error = redact(f"{type(exc).__name__}: {exc}")[:500]
                    log.warning("applying events failed, will retry: %s", self.stats.last_error)
                if self._idle:  # events are quiet: the warehouse is let go until they come
                    kept.release()
        finally:
            kept.release()

    def _rest(self) -> bool:
        """Waits `interval` for the next tick; True once stopped. While the DuckDB file is
        kept open, it asks every `WANT_POLL_SECONDS` whether another step waits for the file,
        and hands the file over at once."""
        deadline = time.monotonic() + self.interval
        kept = self.router.file
        while kept.is_open:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._stop.is_set()
            if self._stop.wait(min(WANT_POLL_SECONDS, left)):
                return True
            if kept.wanted():
                kept.release()
        return self._stop.wait(max(0.0, deadline - time.monotonic()))

    def _tick_between_builds(self) -> bool:
        """A tick, unless the marts follower is building (`MartsFollower.between_builds`):
        the batch is then applied at a tick after the build."""
        if self.follower is None:
            return self.tick()
        with self.follower.between_builds() as free:
            return free and self.tick()

    def tick(self) -> bool:
        """Applies what the spool holds beyond the mark; True when there was a batch.

        Bad records are set aside only once the batch's load committed: a batch that fails
        (the warehouse's fault) is read again next tick, and quarantines nothing meanwhile."""
        batch = read_from(self.spool.directory, self.position, MAX_BATCH_BYTES)
        self._backlog = sum(len(line.data) for line in batch.lines) >= BACKLOG_BYTES
        self._idle = batch.end == self.position
        if self._idle:
            return False
        events, bad = sort_lines(batch.lines)
        try:
            counts = apply_batch(self.router, events) if events else {}
        except WarehouseBusy:
            return False
        except DroneOpsError as exc:
            error = redact(str(exc))
            if error != self.stats.last_error:  # once while the cause lasts, not every tick
                log.warning("events not applied yet, will retry: %s", error)
            self.stats.last_error = error
            return False
        for line, reason in bad:
            self.quarantine.add(line, reason)
        self.mark.save(batch.end)
        self.position = batch.end
        self._show(batch.end)
        self.spool.release(batch.end.segment)
        self.stats.batches += 1
        self.stats.applied += counts.get("applied", 0)
        self.stats.quarantined = len(self.quarantine)
        for outcome, count in counts.items():
            self.stats.outcomes[outcome] = self.stats.outcomes.get(outcome, 0) + count
        self.stats.last_error = None
        if events:
            log.info("applied a batch of %d events: %s", len(events), counts)
        if counts.get("applied", 0) and self.follower is not None:
            self.follower.changed()
        return True

    def _show(self, position: Position) -> None:
        self.stats.segment, self.stats.offset = position.segment, position.offset
