"""What every walker of one run shares, passed to each explicitly, so none of the three walkers
reaches back into another: the client, the plan, each table's snapshot and request counters,
the creators seen, the run's one cancellation token and the thread pools.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..exceptions import Interrupted
from ..http import DroneOpsClient
from ..tables.breaches import Issue
from .creators import Creators
from .plan import WalkPlan
from .spill import TableSnapshot

ProgressCallback = Callable[[str, int], None]
"""Called with (table, rows) as the walk sees rows, for a live progress line."""


@dataclass
class WalkStats:
    """Request counters of one table's walk; shared by its worker threads."""

    requests: int = 0
    retries: int = 0
    pages: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.pages += pages


@dataclass
class WalkContext:
    """The shared state of one run's walk. Pools are set while the walk runs."""

    client: DroneOpsClient
    plan: WalkPlan
    run_id: str
    tables: dict[str, TableSnapshot]
    cancel: threading.Event
    """The run's one cancellation token: set by a signal, `interrupt()` or `close()`."""
    progress: ProgressCallback | None = None
    issues: list[Issue] = field(default_factory=list)
    stats: dict[str, WalkStats] = field(default_factory=dict)
    creators: Creators = field(default_factory=Creators)
    pool: ThreadPoolExecutor | None = None
    spill_pool: ThreadPoolExecutor | None = None
    futures: dict[str, deque[Future[None]]] = field(default_factory=dict)
    futures_lock: threading.Lock = field(default_factory=threading.Lock)

    def check_cancelled(self) -> None:
        if self.cancel.is_set():
            raise Interrupted("the walk")

    def report(self, table: str, rows: int) -> None:
        if self.progress is not None and rows:
            self.progress(table, rows)

    def submit(self, stage: str, fn: Callable[..., None], *args: Any) -> None:
        """Runs `fn` in the walk's pool as part of `stage` (the stage waits for it)."""
        assert self.pool is not None, "walkers submit only while the walk runs"
        future = self.pool.submit(fn, *args)
        with self.futures_lock:
            self.futures.setdefault(stage, deque()).append(future)
