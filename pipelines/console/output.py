"""What a person or a log shipper sees of a command: progress, summaries, the final outcome.

Two outputs with the same methods: `TextOutput` (a table for people; plain and never truncated
when the output is a file) and `JsonOutput` (`json_output.py`: one JSON object per line, ending
with a `summary`). Every line goes through `redact`, so a secret that slipped into some
library's message never leaves the process.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from drone_ops_sync.sources.drone_ops import SyncReport, TableResult
from drone_ops_sync.sources.drone_ops.internal import AccessReport, redact

from ..run.sync import SyncOutcome
from .progress import ProgressCounter, live_progress
from .summary import models_fields, print_summary, root_cause, table_fields

if TYPE_CHECKING:
    from pathlib import Path

    from ..publish.dbt_build import ModelsResult
    from ..publish.snapshot import SnapshotResult
    from ..run.fleet import WorkspaceRun
    from ..run.signals import SignalStop

PLAIN_WIDTH = 120  # output to a file or pipe, unless COLUMNS says (docs/operations.md, Output)
# the summary's `outcome` for a command that ended before its summary
_FAILED_OUTCOMES = {
    "configuration error": "config_error",
    "warehouse busy": "busy",
    "disk full": "failed",
}


def make_console() -> Console:
    """Rich output on a terminal; else plain, `PLAIN_WIDTH` or COLUMNS (rich reads it) wide."""
    if sys.stdout.isatty():
        return Console()
    width = None if os.environ.get("COLUMNS", "").lstrip("0").isdigit() else PLAIN_WIDTH
    return Console(width=width, soft_wrap=True, no_color=True, highlight=False)


class Output:
    """The common face of `TextOutput` and `JsonOutput`; also the run's observer
    (`sync.RunObserver`), keeping the final summary alerts, metrics and lineage read."""

    def __init__(self, console: Console, heartbeat_seconds: float) -> None:
        self.console = console
        self.started = time.monotonic()
        self.heartbeat_seconds = heartbeat_seconds
        self.warehouse: str | None = None
        """Set by the command once it knows where it loads; named in the `start` event."""
        self.outcome: SyncOutcome | None = None
        self.summary: dict[str, Any] | None = None
        """The final summary's fields, once `finish` ran."""
        self.workspaces: dict[str, dict[str, Any]] = {}
        """A fleet run's workspaces by name (`workspace_finished`), for the final summary."""
        self.workspaces_exit = 0
        """A fleet's exit code from its workspaces (`fleet_exit_code`), even if the models built."""
        self.doing: tuple[str, str] | None = None
        """What the command is doing (`status`), and what the next run does if a signal
        stops it there (`interrupted`)."""

    def workspace_finished(self, run: WorkspaceRun) -> None:
        """One workspace of a fleet run ended (`fleet.py`); shown as it happens."""
        fields = {
            "exit_code": run.exit_code,
            "outcome": run.summary.get("outcome", "crashed"),
            "run_id": run.summary.get("run_id"),
            "pipeline_name": run.summary.get("pipeline_name"),
            "rows_written": run.summary.get("rows_written", 0),
            "requests": run.summary.get("requests", 0),
            "seconds": round(run.seconds, 3),
            "worker": run.worker,
            "error": redact(run.error) if run.error else None,
        }
        self.workspaces[run.name] = fields
        self._workspace(run.name, fields)

    def _workspace(self, name: str, fields: dict[str, Any]) -> None:
        raise NotImplementedError

    def workspace_check(self, name: str, report: AccessReport | None, error: str | None) -> None:
        """`drone-sync check` of one workspace among several: its report, or why it failed."""
        raise NotImplementedError

    def run_started(self, report: SyncReport, tables: Sequence[str]) -> None:
        """The run has its id (`sync.RunObserver`)."""

    def table_finished(self, result: TableResult) -> None:
        """A table's load group ended (`sync.RunObserver`)."""

    def progress(self) -> AbstractContextManager[ProgressCounter | None]:
        return nullcontext(None)

    @contextmanager
    def status(self, message: str, then: str) -> Iterator[None]:
        """Shows `message` while the block runs, kept with `then` for the line of a signal that
        stops the command there (a block left by an exception leaves it for `interrupted`)."""
        self.doing = (f"while {message}", then)
        with self._showing(message):
            yield
        self.doing = None

    def _showing(self, message: str) -> AbstractContextManager[Any]:
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
        self._failed(kind, message)
        return self.finish(exit_code, _FAILED_OUTCOMES.get(kind, kind), error=message)

    def _failed(self, kind: str, message: str) -> None:
        raise NotImplementedError

    def interrupted(
        self,
        stop: SignalStop,
        then: str,
        *,
        doing: str = "",
        outcome: SyncOutcome | None = None,
    ) -> int:
        """Ends a command a signal stopped: one line saying what it was doing and what the next
        run does (`then`), none for a closed stdout; then the summary, unless already printed."""
        if self.doing is not None:
            doing, then = self.doing
        line = stop.interrupted(doing, then)
        if line is not None:
            self._failed("interrupted", line)
        if self.summary is not None:
            return stop.exit_code
        return self.finish(
            stop.exit_code, "interrupted", outcome, error=line or "the standard output was closed"
        )

    def finish(
        self,
        exit_code: int,
        outcome_label: str,
        outcome: SyncOutcome | None = None,
        models: ModelsResult | None = None,
        error: str | None = None,
    ) -> int:
        """Ends the command: records its summary (the root cause as `error` on failure) and
        shows it where the format has one."""
        outcome = outcome if outcome is not None else self.outcome
        if self.workspaces_exit and exit_code == 0:
            exit_code, outcome_label = self.workspaces_exit, "failed"
            failed = [name for name, run in self.workspaces.items() if run["exit_code"]]
            error = f"workspaces failed: {', '.join(failed)} (causes above)"
        if error is None and exit_code != 0:
            error = _failure_cause(outcome, models)
        tables = table_fields(outcome) if outcome is not None else {}
        self.summary = {
            "outcome": outcome_label,
            "exit_code": exit_code,
            "run_id": outcome.report.run_id if outcome is not None else None,
            "pipeline_name": outcome.pipeline_name if outcome is not None else None,
            "tables": tables,
            "requests": sum(row["requests"] for row in tables.values()),
            "retries": sum(row["retries"] for row in tables.values()),
            "rows_written": sum(
                row["new"] + row["changed"] + row["retired"] for row in tables.values()
            ),
            "issues": outcome.issues if outcome is not None else 0,
            "seconds": round(time.monotonic() - self.started, 3),
            "models": models_fields(models, None) if models is not None else None,
            "error": redact(error) if error else None,
        }
        if self.workspaces:
            # a fleet's totals are its workspaces' (each one's tables are in its own summary)
            self.summary["workspaces"] = self.workspaces
            self.summary["requests"] = sum(w["requests"] for w in self.workspaces.values())
            self.summary["rows_written"] = sum(w["rows_written"] for w in self.workspaces.values())
        self._finished(self.summary)
        return exit_code

    def _finished(self, summary: dict[str, Any]) -> None:
        """Shows the final summary; text output has shown everything by then."""


class TextOutput(Output):
    def progress(self) -> AbstractContextManager[ProgressCounter | None]:
        return live_progress(self.console)

    def _showing(self, message: str) -> AbstractContextManager[Any]:
        return self.console.status(message) if self.console.is_terminal else nullcontext()

    def sync_summary(self, outcome: SyncOutcome) -> None:
        self.outcome = outcome
        print_summary(self.console, outcome)

    def models_summary(self, result: ModelsResult, dataset: str) -> None:
        if result.reused_from is not None:
            self.console.print(
                f"dbt: models not rebuilt: no data changed since their build at"
                f" {result.reused_from} (marts in schema {dataset}_marts; --force-models"
                " rebuilds)"
            )
            return
        scope = (
            f"downstream of {', '.join(result.changed_tables)}"
            if result.scope == "changed"
            else f"all: {result.reason}"
            if result.reason
            else "all"
        )
        self.console.print(
            f"dbt: {result.models_built} models built ({scope}), {result.tests_passed} tests"
            f" passed, {result.tests_failed} failed in {result.seconds:.1f}s"
            f" (marts in schema {dataset}_marts)"
        )
        for failure in result.failures:
            self.console.print(f"[bold red]{failure.node}[/bold red]: {escape(failure.message)}")
        if result.error:
            self.console.print(f"[bold red]dbt error[/bold red]: {escape(redact(result.error))}")

    def _workspace(self, name: str, fields: dict[str, Any]) -> None:
        seconds = f"{fields['seconds']:.1f} s"
        if fields["exit_code"] == 0:
            self.console.print(
                f"[green]{escape(name)}[/green]: {fields['outcome']} in {seconds},"
                f" {fields['rows_written']:,} rows written, {fields['requests']:,} requests"
            )
        else:
            self.console.print(
                f"[red]{escape(name)}[/red]: {fields['outcome']} (exit {fields['exit_code']})"
                f" after {seconds}: {escape(fields['error'] or '')}"
            )

    def workspace_check(self, name: str, report: AccessReport | None, error: str | None) -> None:
        self.console.print(f"[bold]workspace {escape(name)}[/bold]")
        if report is not None:
            self.access_report(report)
        else:
            self.console.print(f"  [red]fail[/red] {escape(error or '')}")

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
            f" {_how_published(result)}"
            f" in {result.seconds:.2f}s"
            + (f"; dashboard {result.dashboard}" if result.dashboard else ""),
            markup=False,
            highlight=False,
        )

    def snapshot_failed(self, path: Path, message: str) -> None:
        self.console.print(f"[bold red]BI snapshot failed[/bold red]: {escape(message)}")

    def _failed(self, kind: str, message: str) -> None:
        # stderr, one line: what cron mails and what an orchestrator shows
        sys.stderr.write(f"drone-sync: {kind}: {message}\n")


def _failure_cause(outcome: SyncOutcome | None, models: ModelsResult | None) -> str | None:
    """Why a command failed, when the caller did not say: the run's root cause, else dbt's."""
    cause = root_cause(outcome) if outcome is not None else None
    if cause is None and models is not None and not models.ok:
        failures = [f"{failure.node}: {failure.message}" for failure in models.failures]
        cause = models.error or (failures[0] if failures else "the dbt build failed")
    return cause


def _size(size: int) -> str:
    """A file size as people read it: 812 KB, 3.4 MB, 1.20 GB."""
    if size < 1_000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:,.0f} KB"
    if size < 1_000_000_000:
        return f"{size / 1_000_000:,.1f} MB"
    return f"{size / 1_000_000_000:,.2f} GB"


def _how_published(result: SnapshotResult) -> str:
    if not result.refreshed:
        return "published"
    if not result.replaced:
        return "refreshed, marts kept,"
    count = len(result.replaced)
    return f"refreshed, {count} rebuilt mart{'s' if count != 1 else ''} replaced,"
