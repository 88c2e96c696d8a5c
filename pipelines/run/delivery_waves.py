"""Deliveries loaded while the chains still walk, and the marks that keep that safe.

Why: the delivery logs are the walk's longest part, and loading them only after the last chain
ended would leave the end of a run doing nothing else (docs/performance.md). A wave loads entries of
chains that may still fail; what keeps that from leaving a gap is the mark: the newest entry of
a chain that reached known ground, recorded in `_sync_delivery_marks` only after every delivery
load of the run succeeded. A run that fails records nothing, so the next walks from the
previous mark again and the merge on id drops what the waves had loaded.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from dlt.pipeline.exceptions import PipelineStepFailed

from drone_ops_sync.sources.drone_ops import DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import SyncRun, delivery_wave, marks_resource

from .errors import root_cause
from .run_trace import RunLoads

log = logging.getLogger(__name__)

WAVE_POLL_SECONDS = 0.5
BUSY_WINDOW_SECONDS = 2.0
BUSY_CPU_SHARE = 0.8
"""Process CPU seconds per wall second above which the walk of the lists counts as busy."""


def record_marks_first(loads: RunLoads, run: SyncRun) -> None:
    """Before the first load of a warehouse whose marks are not recorded yet (first sync, or
    last synced before waves): records the marks it has, read from its deliveries, so that no
    wave ever runs on marks that a partial load could move."""
    known = run.known
    assert known is not None, "the run reads what the warehouse holds when it opens"
    if known.marks_recorded or "webhook_deliveries" not in run.options.tables:
        return
    marks = {
        hook: mark.newest_ms
        for hook, mark in known.delivery_marks.items()
        if mark.newest_ms is not None
    }
    loads.run(marks_resource(run.run_id, marks))


class DeliveryWaves:
    """Loads the typed deliveries in waves of at least `Seams.delivery_wave_rows` while the
    walk goes on: while the lists still walk (with latency they can be the walk's longest
    part), and while the chains do."""

    def __init__(self, loads: RunLoads, run: SyncRun) -> None:
        self.loads = loads
        self.run = run
        self.wave_rows = run.seams.delivery_wave_rows
        self.count = 0
        self.error: str | None = None
        """Why a wave failed; the run then records no marks, and the table fails with it."""

    def load_while(self, stage: str, *, only_when_idle: bool = False) -> None:
        """Loads waves until `stage` of the walk has finished (or a wave fails). With
        `only_when_idle` a wave waits while the process is busy (`_CpuWindow`): in a CPU-bound
        walk it would take the GIL from the walkers instead of hiding in their waits."""
        window = _CpuWindow()
        while self.error is None and self.run.walking(stage, WAVE_POLL_SECONDS):
            if self.run.interrupted:
                return
            if self.run.deliveries_waiting() < self.wave_rows:
                continue
            if only_when_idle and window.busy():
                continue
            wave: Any = delivery_wave(self.run)
            try:
                self.loads.run(wave)
            except PipelineStepFailed as exc:
                self.error = (
                    f"a wave of deliveries failed to load: {exc.step} failed: {root_cause(exc)}"
                )
                self.run.deliveries_failed(DroneOpsError(self.error))
                log.error("%s", self.error)
                return
            self.count += 1
            window.restart()


class _CpuWindow:
    """The process's CPU share over the last couple of seconds: above `BUSY_CPU_SHARE` of one
    core the walk is waiting on the GIL, not on the network."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.wall = time.monotonic()
        self.cpu = time.process_time()

    def busy(self) -> bool:
        """True while a window is still open or the last closed one was busy."""
        elapsed = time.monotonic() - self.wall
        if elapsed < BUSY_WINDOW_SECONDS:
            return True
        share = (time.process_time() - self.cpu) / elapsed
        self.restart()
        return share > BUSY_CPU_SHARE
