"""The live progress line a person sees while a sync runs: rows walked per table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..run.sync import SyncOutcome, run_sync
from ..run.target import Target


class ProgressCounter:
    """Thread-safe row counts per table, fed by the walk's worker threads."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, table: str, rows: int) -> None:
        with self._lock:
            self.counts[table] = self.counts.get(table, 0) + rows

    def snapshot(self) -> dict[str, int]:
        """Rows walked so far per table, as a copy."""
        with self._lock:
            return dict(self.counts)

    def render(self) -> Text:
        with self._lock:
            parts = [f"{table} {count:,}" for table, count in self.counts.items()]
        elapsed = time.monotonic() - self.started
        return Text(f"syncing ({elapsed:4.1f}s), rows walked: " + (" · ".join(parts) or "starting"))


@contextmanager
def live_progress(console: Console) -> Iterator[ProgressCounter | None]:
    """A one-line live counter on a terminal; nothing when output is a file or a pipe."""
    if not console.is_terminal:
        yield None
        return
    counter = ProgressCounter()
    with Live(counter.render(), console=console, refresh_per_second=4, transient=True) as live:
        stop = threading.Event()

        def refresh() -> None:
            while not stop.wait(0.25):
                live.update(counter.render())

        thread = threading.Thread(target=refresh, daemon=True)
        thread.start()
        try:
            yield counter
        finally:
            stop.set()
            thread.join()


@contextmanager
def heartbeat(every: float, beat: Callable[[ProgressCounter], None]) -> Iterator[ProgressCounter]:
    """Counts rows like the live line and calls `beat` every `every` seconds until the block
    ends: for logs, where a long walk must still show it is alive."""
    counter = ProgressCounter()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            beat(counter)

    thread = threading.Thread(target=loop, name="drone-sync-heartbeat", daemon=True)
    thread.start()
    try:
        yield counter
    finally:
        stop.set()
        thread.join()


def sync_with_progress(target: Target, console: Console, **kwargs: Any) -> SyncOutcome:
    """A sync with the live progress line, as the demo shows it."""
    with live_progress(console) as counter:
        return run_sync(target, progress=counter, **kwargs)
