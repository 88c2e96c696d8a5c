"""What a person sees: live progress while walking and the closing summary of a run."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sources.drone_ops import settings as source_settings

from .sync import SyncOutcome

STATUS_STYLE = {
    "success": "green",
    "failed": "bold red",
    "refused": "bold yellow",
    "skipped": "dim",
}


class _BenignDltWarnings(logging.Filter):
    """Hides a dlt warning that fires on every run for our JSON columns: we declare them
    `json` while Arrow carries them as text, which is exactly what we intend."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "when merging arrow schema with dlt schema" not in record.getMessage()


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("dlt").addFilter(_BenignDltWarnings())
    if not verbose:
        logging.getLogger("httpx").setLevel(logging.WARNING)


class ProgressCounter:
    """Thread-safe row counts per table, fed by the walk's worker threads."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, table: str, rows: int) -> None:
        with self._lock:
            self.counts[table] = self.counts.get(table, 0) + rows

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


def print_summary(console: Console, outcome: SyncOutcome, title: str = "Sync summary") -> None:
    report = outcome.report
    table = Table(title=f"{title} · run {report.run_id}", title_justify="left")
    table.add_column("table", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for header in ("seen", "new", "changed", "retired", "pages", "requests", "retries", "s"):
        table.add_column(header, justify="right")
    for name in (*source_settings.ALL_TABLES,):
        result = report.tables.get(name)
        if result is None:
            continue
        table.add_row(
            name,
            Text(result.status, style=STATUS_STYLE.get(result.status, "")),
            f"{result.rows_seen:,}",
            f"{result.new:,}",
            f"{result.changed:,}",
            f"{result.retired:,}",
            f"{result.pages:,}",
            f"{result.requests:,}",
            f"{result.retries:,}",
            f"{result.seconds:.2f}",
        )
    console.print(table)
    requests = sum(r.requests for r in report.tables.values())
    console.print(
        f"{requests:,} requests · load {outcome.load_seconds:.2f}s · total"
        f" {outcome.total_seconds:.2f}s"
        + (f" · {outcome.issues} contract issues in _sync_issues" if outcome.issues else "")
        + (f" · database {outcome.database}" if outcome.database else "")
    )
    for note in outcome.notes:
        console.print(f"[dim]note: {note}[/dim]")
    for result in report.tables.values():
        if result.error:
            console.print(f"[bold red]{result.table}[/bold red]: {result.error}")
        if result.scope:
            console.print(f"[bold]{result.table}[/bold]: {result.scope}")
    if outcome.load_error:
        console.print(f"[bold red]load failed[/bold red]: {outcome.load_error}")
    verdict = (
        "[green]all tables loaded[/green]" if outcome.ok else "[bold red]run failed[/bold red]"
    )
    console.print(verdict)
