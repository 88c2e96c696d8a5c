"""What a person or a log shipper sees: live progress, run summaries, and the final outcome.

Two outputs with the same methods: `TextOutput` (a table for people; plain and never truncated
when the output is a file, as under cron) and `JsonOutput` (one JSON object per line on stdout,
ending with a `summary` object, for log shippers). Every line goes through `redact`, so a secret
that slipped into some library's message never leaves the process.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sources.drone_ops import settings as source_settings
from sources.drone_ops.check import AccessReport
from sources.drone_ops.secrets import redact

from .sync import SyncOutcome

if TYPE_CHECKING:
    from pathlib import Path

    from .models import ModelsResult
    from .snapshot import SnapshotResult

STATUS_STYLE = {
    "success": "green",
    "failed": "bold red",
    "refused": "bold yellow",
    "interrupted": "bold yellow",
    "skipped": "dim",
}
# Wide enough for the summary table and for error lines, so a log file gets them whole.
PLAIN_WIDTH = 240


def make_console() -> Console:
    """A terminal gets rich output at its width; a file or pipe gets plain, unwrapped text."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=PLAIN_WIDTH, soft_wrap=True, no_color=True, highlight=False)


# dlt warnings about choices we made on purpose: our JSON columns are declared `json` while
# Arrow carries them as text; PostgreSQL loads by INSERT from Arrow (see Target.loader_file_format)
_BENIGN_DLT_WARNINGS = (
    "when merging arrow schema with dlt schema",
    "A ArrowToInsertValuesWriter writer is used",
)


class _BenignDltWarnings(logging.Filter):
    """Hides dlt warnings that fire on every run about what we intend."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(benign in message for benign in _BENIGN_DLT_WARNINGS)


class _ThroughOurHandlers(_BenignDltWarnings):
    """Sends dlt's records to the root logger's handlers (ours: redacting, text or JSON)
    and never to dlt's own. dlt re-adds a stderr handler to its logger whenever it
    re-initialises its runtime, which a one-time removal cannot prevent; a filter on the
    logger itself runs before any handler, so it holds."""

    def filter(self, record: logging.LogRecord) -> bool:
        if super().filter(record):
            for handler in logging.getLogger().handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)
        return False


class _Redacting(logging.Formatter):
    """Formats as usual, then removes any registered secret from the whole line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = {
            "event": "log",
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            event["error"] = redact(repr(record.exc_info[1]))
        return json.dumps(event, default=str)


def setup_logging(verbose: bool, *, json_lines: bool = False) -> None:
    """Logs to stderr as text, or to stdout as JSON lines beside the events."""
    handler = logging.StreamHandler(sys.stdout if json_lines else sys.stderr)
    handler.setFormatter(
        _JsonLines()
        if json_lines
        else _Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler.addFilter(_BenignDltWarnings())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    # dlt configures its own logger from runtime.log_level; route it through ours
    dlt_logger = logging.getLogger("dlt")
    dlt_logger.handlers.clear()
    dlt_logger.propagate = False
    for existing_filter in list(dlt_logger.filters):
        dlt_logger.removeFilter(existing_filter)
    dlt_logger.addFilter(_ThroughOurHandlers())
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


def table_fields(outcome: SyncOutcome) -> dict[str, dict[str, Any]]:
    """Per table, what a run did: the summary table's columns, as plain values."""
    return {
        name: {
            "status": result.status,
            "rows_seen": result.rows_seen,
            "new": result.new,
            "changed": result.changed,
            "retired": result.retired,
            "pages": result.pages,
            "requests": result.requests,
            "retries": result.retries,
            "seconds": round(result.seconds, 3),
            "error": redact(result.error) if result.error else None,
            "scope": result.scope,
        }
        for name in source_settings.ALL_TABLES
        if (result := outcome.report.tables.get(name)) is not None
    }


def print_summary(console: Console, outcome: SyncOutcome, title: str = "Sync summary") -> None:
    report = outcome.report
    table = Table(
        title=f"{title} · run {report.run_id}",
        title_justify="left",
        # plain ASCII in a log file, which grep and mail readers take as text
        box=box.HEAVY_HEAD if console.is_terminal else box.ASCII2,
    )
    table.add_column("table", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for header in ("seen", "new", "changed", "retired", "pages", "requests", "retries", "s"):
        table.add_column(header, justify="right", no_wrap=True)
    fields = table_fields(outcome)
    for name, row in fields.items():
        table.add_row(
            name,
            Text(row["status"], style=STATUS_STYLE.get(row["status"], "")),
            *(f"{row[key]:,}" for key in ("rows_seen", "new", "changed", "retired", "pages")),
            *(f"{row[key]:,}" for key in ("requests", "retries")),
            f"{row['seconds']:.2f}",
        )
    console.print(table)
    requests = sum(r.requests for r in report.tables.values())
    console.print(
        f"{requests:,} requests · load {outcome.load_seconds:.2f}s · total"
        f" {outcome.total_seconds:.2f}s"
        + (f" · {outcome.issues} contract issues in _sync_issues" if outcome.issues else "")
        + (f" · database {outcome.database}" if outcome.database else ""),
        markup=False,
    )
    for note in outcome.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    for name, row in fields.items():
        if row["scope"]:
            console.print(f"[bold]{name}[/bold]: {escape(row['scope'])}")
    causes = _group_causes({name: row["error"] for name, row in fields.items() if row["error"]})
    for error, names in causes.items():
        console.print(f"[bold red]{', '.join(names)}[/bold red]: {escape(error)}")
    if outcome.load_error and outcome.load_error not in causes:
        console.print(f"[bold red]load failed[/bold red]: {escape(redact(outcome.load_error))}")
    interrupted = [name for name, row in fields.items() if row["status"] == "interrupted"]
    if interrupted:
        loaded = [name for name in fields if outcome.report.tables[name].loaded]
        console.print(
            "[bold yellow]interrupted[/bold yellow]: not loaded: "
            + ", ".join(interrupted)
            + (f"; loaded in full: {', '.join(loaded)}" if loaded else "")
            + "; the next run picks up the rest"
        )
    elif outcome.ok:
        console.print("[green]all tables loaded[/green]")
    else:
        console.print("[bold red]run failed[/bold red]")


def _group_causes(errors: dict[str, str]) -> dict[str, list[str]]:
    """One line per cause: an unreachable API fails every table the same way, and a table
    that failed because another did ("job walk incomplete because the project list failed:
    <cause>") is listed with that cause."""
    causes: dict[str, list[str]] = {}
    bare = {name: error.removeprefix(f"{name}: ") for name, error in errors.items()}
    for name, error in sorted(bare.items(), key=lambda item: len(item[1])):
        cause = next((known for known in causes if error.endswith(known)), error)
        causes.setdefault(cause, []).append(name)
    return {cause: sorted(names, key=list(errors).index) for cause, names in causes.items()}


class Output:
    """The common face of `TextOutput` and `JsonOutput`."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = time.monotonic()

    def progress(self) -> AbstractContextManager[ProgressCounter | None]:
        return nullcontext(None)

    def status(self, message: str) -> AbstractContextManager[Any]:
        return nullcontext()

    def sync_summary(self, outcome: SyncOutcome) -> None:
        raise NotImplementedError

    def models_summary(self, result: ModelsResult, dataset: str) -> None:
        raise NotImplementedError

    def access_report(self, report: AccessReport) -> None:
        raise NotImplementedError

    def snapshot_summary(self, result: SnapshotResult) -> None:
        """The BI snapshot was published: where, how big, how long it took."""
        raise NotImplementedError

    def snapshot_failed(self, path: Path, message: str) -> None:
        """The BI snapshot could not be published: one line saying why."""
        raise NotImplementedError

    def fail(self, kind: str, message: str, exit_code: int) -> int:
        """A run that ended before a summary: one line (or one event) and the exit code."""
        raise NotImplementedError

    def finish(
        self,
        exit_code: int,
        outcome_label: str,
        outcome: SyncOutcome | None = None,
        models: ModelsResult | None = None,
        error: str | None = None,
    ) -> int:
        return exit_code


class TextOutput(Output):
    def progress(self) -> AbstractContextManager[ProgressCounter | None]:
        return live_progress(self.console)

    def status(self, message: str) -> AbstractContextManager[Any]:
        return self.console.status(message) if self.console.is_terminal else nullcontext()

    def sync_summary(self, outcome: SyncOutcome) -> None:
        print_summary(self.console, outcome)

    def models_summary(self, result: ModelsResult, dataset: str) -> None:
        self.console.print(
            f"dbt: {result.models_built} models built, {result.tests_passed} tests passed,"
            f" {result.tests_failed} failed in {result.seconds:.1f}s"
            f" (marts in schema {dataset}_marts)"
        )
        for failure in result.failures:
            self.console.print(f"[bold red]{failure.node}[/bold red]: {escape(failure.message)}")
        if result.error:
            self.console.print(f"[bold red]dbt error[/bold red]: {escape(redact(result.error))}")

    def access_report(self, report: AccessReport) -> None:
        self.console.print(
            f"API {escape(report.base_url)}: key accepted, scope [bold]{report.scope}[/bold]"
        )
        for name, what in report.reachable.items():
            self.console.print(f"  [green]ok[/green]   {name}: {escape(what)}")
        for name, error in report.failures.items():
            self.console.print(f"  [red]fail[/red] {name}: {escape(redact(error))}")

    def snapshot_summary(self, result: SnapshotResult) -> None:
        what = (
            f"{len(result.tables)} tables{', raw included' if result.include_raw else ''}"
            if result.tables
            else "no tables yet: the marts are built by drone-sync run or drone-sync models"
        )
        self.console.print(
            f"BI snapshot: {result.path} ({what}, {_size(result.bytes)})"
            f" published in {result.seconds:.2f}s",
            markup=False,
            highlight=False,
        )

    def snapshot_failed(self, path: Path, message: str) -> None:
        self.console.print(f"[bold red]BI snapshot failed[/bold red]: {escape(message)}")

    def fail(self, kind: str, message: str, exit_code: int) -> int:
        # stderr, one line: what cron mails and what an orchestrator shows
        sys.stderr.write(f"drone-sync: {kind}: {message}\n")
        return exit_code


class JsonOutput(Output):
    def _emit(self, event: str, **fields: Any) -> None:
        record = {"event": event, "ts": datetime.now(UTC).isoformat(timespec="milliseconds")}
        record.update(fields)
        sys.stdout.write(redact(json.dumps(record, default=str)) + "\n")
        sys.stdout.flush()

    def sync_summary(self, outcome: SyncOutcome) -> None:
        for name, fields in table_fields(outcome).items():
            self._emit("table", run_id=outcome.report.run_id, table=name, **fields)
        for note in outcome.notes:
            self._emit("note", message=note)

    def models_summary(self, result: ModelsResult, dataset: str) -> None:
        self._emit("models", **_models_fields(result, dataset))

    def access_report(self, report: AccessReport) -> None:
        self._emit(
            "check",
            base_url=report.base_url,
            scope=report.scope,
            reachable=report.reachable,
            failures=report.failures,
        )

    def snapshot_summary(self, result: SnapshotResult) -> None:
        self._emit("snapshot", **_snapshot_fields(result))

    def snapshot_failed(self, path: Path, message: str) -> None:
        self._emit(
            "snapshot",
            ok=False,
            path=str(path),
            tables=[],
            bytes=None,
            seconds=None,
            run_id=None,
            include_raw=None,
            error=message,
        )

    def fail(self, kind: str, message: str, exit_code: int) -> int:
        self._emit("error", kind=kind, message=message)
        outcome_label = {"configuration error": "config_error", "warehouse busy": "busy"}.get(
            kind, kind
        )
        return self.finish(exit_code, outcome_label, error=message)

    def finish(
        self,
        exit_code: int,
        outcome_label: str,
        outcome: SyncOutcome | None = None,
        models: ModelsResult | None = None,
        error: str | None = None,
    ) -> int:
        tables = table_fields(outcome) if outcome is not None else {}
        self._emit(
            "summary",
            outcome=outcome_label,
            exit_code=exit_code,
            run_id=outcome.report.run_id if outcome is not None else None,
            tables=tables,
            requests=sum(row["requests"] for row in tables.values()),
            retries=sum(row["retries"] for row in tables.values()),
            rows_written=sum(
                row["new"] + row["changed"] + row["retired"] for row in tables.values()
            ),
            issues=outcome.issues if outcome is not None else 0,
            seconds=round(time.monotonic() - self.started, 3),
            models=_models_fields(models, None) if models is not None else None,
            error=error,
        )
        return exit_code


def _models_fields(result: ModelsResult, dataset: str | None) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "models_built": result.models_built,
        "tests_passed": result.tests_passed,
        "tests_failed": result.tests_failed,
        "seconds": round(result.seconds, 3),
        "failures": [f"{failure.node}: {failure.message}" for failure in result.failures],
        "error": redact(result.error) if result.error else None,
        **({"marts_schema": f"{dataset}_marts"} if dataset else {}),
    }


def _snapshot_fields(result: SnapshotResult) -> dict[str, Any]:
    return {
        "ok": True,
        "path": str(result.path),
        "tables": list(result.tables),
        "bytes": result.bytes,
        "seconds": round(result.seconds, 3),
        "run_id": result.run_id,
        "include_raw": result.include_raw,
        "error": None,
    }


def _size(size: int) -> str:
    """A file size as people read it: 812 KB, 3.4 MB, 1.20 GB."""
    if size < 1_000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:,.0f} KB"
    if size < 1_000_000_000:
        return f"{size / 1_000_000:,.1f} MB"
    return f"{size / 1_000_000_000:,.2f} GB"
