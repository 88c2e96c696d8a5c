"""The live progress line a person sees while a sync runs: rows walked per table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.text import Text


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
    live = Live(counter.render(), console=console, refresh_per_second=4, transient=True)
    with live, every(0.25, lambda: live.update(counter.render())):
        yield counter


@contextmanager
def heartbeat(seconds: float, beat: Callable[[ProgressCounter], None]) -> Iterator[ProgressCounter]:
    """Counts rows like the live line and calls `beat` every `seconds` until the block ends:
    for logs, where a long walk must still show it is alive."""
    counter = ProgressCounter()
    with every(seconds, lambda: beat(counter)):
        yield counter


@contextmanager
def every(seconds: float, action: Callable[[], None]) -> Iterator[None]:
    """Calls `action` every `seconds` on a thread of its own while the block runs; the thread
    is stopped and joined when the block ends, however it ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(seconds):
            action()

    thread = threading.Thread(target=loop, name="drone-sync-every", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
