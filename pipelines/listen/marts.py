"""The marts and the BI snapshot follow applied events (docs/events.md, "Marts that follow").

After a batch applied project versions, a thread rebuilds only the models downstream of the
tables events write, with their tests, and on DuckDB republishes the snapshot; at most one
build per `--follow-marts` interval, so a burst of events costs one build, not one per batch.

Why it writes no build record: a partial build of the projects' dependents does not bring the
jobs' marts up to date, so the record stays as the last scheduled build wrote it and the next
run still builds the projects' dependents itself. A failed partial build removes the record,
so the next run builds every model. It follows only a warehouse whose models a passing build
of this dbt project made; the build takes the same lock as every model build
(`door.models_lock`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from drone_ops_sync.sources.drone_ops.internal import redact

from ..publish.build_plan import SOURCE
from ..publish.build_record import (
    BuildRecord,
    dbt_folder,
    forget_build,
    project_fingerprint,
    read_record,
    snapshot_current,
)
from ..publish.dashboard import DashboardError
from ..publish.dbt_build import ModelsResult
from ..publish.snapshot import SnapshotError
from ..publish.snapshot_plan import SnapshotPlan
from ..publishing import dbt_build, parse_models, prepare_models_build, publish_marts
from ..run.door import models_lock
from ..run.target import Target

FOLLOWED_TABLES = ("projects", "_webhook_events")
"""The raw tables an event batch writes: the partial build selects what depends on them."""

log = logging.getLogger(__name__)


@dataclass
class FollowerStats:
    """What `/health` shows of the follower: its last partial build and how many ran."""

    every_seconds: float = 0.0
    builds: int = 0
    failed: int = 0
    pending: bool = False
    last_started_at: str | None = None
    """UTC, ISO 8601."""
    last_ok: bool | None = None
    last_seconds: float | None = None
    last_models: int = 0
    last_snapshot: str | None = None
    last_error: str | None = None
    skipped: str | None = None
    """Why the last change was not followed (no passing build yet, another dbt project)."""


class MartsFollower:
    """The thread that rebuilds the events' dependents after batches, debounced."""

    def __init__(self, base: Target, snapshot: SnapshotPlan | None, every: float) -> None:
        self.target = base.models_target()
        self.snapshot = snapshot
        self.every = every
        self.stats = FollowerStats(every_seconds=every)
        self._parsed: tuple[str, Any | None] | None = None
        """dbt's parse of the project and what it was parsed for (`parse_models`)."""
        self._building = threading.Lock()
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="marts-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """Ends the loop after the build in progress (dbt cannot be cut short cleanly)."""
        self._stop.set()
        self._changed.set()
        self._thread.join(timeout)

    @contextmanager
    def between_builds(self) -> Iterator[bool]:
        """Yields False while a build runs, else True, holding builds off for the block. On
        DuckDB a build holds the file's access lock for its whole length, and a batch takes that
        lock, so a batch started during a build would wait in the lock for the build's end (up
        to `ACCESS_WAIT_SECONDS`), the applier's thread unable to stop meanwhile; skipped, the
        batch stays in the spool for a tick after the build. On a server nothing would wait,
        but batches are held off all the same, so none of them changes the events' tables
        half-way through a build."""
        if not self._building.acquire(blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            self._building.release()

    def changed(self) -> None:
        """Called by the applier after a batch that applied project versions."""
        self.stats.pending = True
        self._changed.set()

    def _loop(self) -> None:
        last_end = -math.inf
        while not self._stop.is_set():
            self._changed.wait()
            # the interval runs from the end of the last build: the file is free that long
            # for the applier's batches and a run's loads, however long builds take
            if self._stop.wait(max(0.0, last_end + self.every - time.monotonic())):
                return
            self._changed.clear()
            started = time.monotonic()
            try:
                self.follow()
            except Exception as exc:  # the warehouse busy or unreachable: the next change retries
                self._failed(redact(f"{type(exc).__name__}: {exc}")[:500], started)
            last_end = time.monotonic()

    def follow(self) -> bool:
        """One partial build and publish; True when the snapshot (or the marts) now show the
        events applied before it started."""
        self.stats.pending = False
        reason = self._not_followable()
        if reason is not None:
            self.stats.skipped = reason
            return False
        self.stats.skipped = None
        started = time.monotonic()
        self.stats.last_started_at = datetime.now(UTC).isoformat(timespec="seconds")
        # the order: this process's batches held off, then the models lock
        with self._building, models_lock(self.target):
            folder = prepare_models_build(self.target, forget=False)
            record = read_record(folder)
            result = self._build()
            error = None if result.ok else self._error(result)
            if error is None and self.snapshot is not None:
                error = self._publish(self.snapshot, record, result.built)
            if error is not None:
                # marts or snapshot may be half updated: the next run builds and publishes
                # every model (the record is gone)
                forget_build(folder)
        if error is not None:
            self._failed(error, started)
            return False
        self.stats.builds += 1
        self.stats.last_ok, self.stats.last_error = True, None
        self.stats.last_seconds = round(time.monotonic() - started, 2)
        self.stats.last_models = result.models_built
        log.info(
            "marts followed the events: %d models rebuilt%s in %.1f s",
            result.models_built,
            " and the snapshot republished" if self.snapshot is not None else "",
            self.stats.last_seconds,
        )
        return True

    def _not_followable(self) -> str | None:
        record = read_record(dbt_folder(self.target.sync_dir()))
        if record is None:
            return "no passing model build recorded yet: the scheduled run builds them first"
        if record.dataset != self.target.dataset:
            return "the last model build was of another dataset"
        if record.project != project_fingerprint():
            return "the dbt project or its engine changed: the scheduled run builds every model"
        return None

    def _build(self) -> ModelsResult:
        """The partial dbt build, inside the models lock, on the project parsed once for as
        long as its inputs stay the same (`parse_models`)."""
        self._parsed = parse_models(self.target, self._parsed)
        select = [f"source:{SOURCE}.{table}+" for table in FOLLOWED_TABLES]
        return dbt_build(
            self.target, select=select, run_tests=True, unit_tests=False, manifest=self._parsed[1]
        )

    @staticmethod
    def _error(result: ModelsResult) -> str:
        failed = ", ".join(f.node for f in result.failures[:5])
        return redact(result.error or f"dbt build failed: {failed}")[:500]

    def _publish(
        self, plan: SnapshotPlan, record: BuildRecord | None, built: list[str]
    ) -> str | None:
        """The snapshot and its page, as `--snapshot`/`--snapshot-raw` say: the snapshot in
        place with the rebuilt marts replaced, when it holds the recorded build's; the error,
        the previous snapshot kept."""
        current = record is not None and snapshot_current(record, plan.path)
        try:
            publish_marts(self.target, plan, built if current else None)
        except (SnapshotError, DashboardError) as exc:
            return redact(str(exc))[:500]
        self.stats.last_snapshot = str(plan.path)
        return None

    def _failed(self, error: str, started: float) -> None:
        self.stats.failed += 1
        self.stats.last_ok, self.stats.last_error = False, error
        self.stats.last_seconds = round(time.monotonic() - started, 2)
        log.warning("the marts did not follow the events (the next run repairs them): %s", error)
