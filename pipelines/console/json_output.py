"""What a log shipper sees of a command: one JSON object per line on stdout (`--log-format
json`), ending with a `summary` object (docs/operations.md lists the events). The face is
`Output`'s (`output.py`), so a command writes the same calls whichever format was asked for."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console

from drone_ops_sync.sources.drone_ops import SyncReport, TableResult
from drone_ops_sync.sources.drone_ops.internal import AccessReport, redact

from ..run.sync import SyncOutcome
from .output import Output
from .progress import ProgressCounter, heartbeat
from .summary import models_fields, result_fields, snapshot_fields, table_fields

if TYPE_CHECKING:
    from pathlib import Path

    from ..publish.dbt_build import ModelsResult
    from ..publish.snapshot import SnapshotResult


class JsonOutput(Output):
    def __init__(self, console: Console, heartbeat_seconds: float) -> None:
        super().__init__(console, heartbeat_seconds)
        self._write_lock = threading.Lock()
        self._run_id: str | None = None
        self._told: set[str] = set()

    def _emit(self, event: str, **fields: Any) -> None:
        record = {"event": event, "ts": datetime.now(UTC).isoformat(timespec="milliseconds")}
        record.update(fields)
        line = redact(json.dumps(record, default=str)) + "\n"
        # the heartbeat writes from its own thread: one whole line at a time
        with self._write_lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def progress(self) -> AbstractContextManager[ProgressCounter | None]:
        return heartbeat(self.heartbeat_seconds, self._heartbeat)

    def _heartbeat(self, counter: ProgressCounter) -> None:
        counts = counter.snapshot()
        self._emit(
            "heartbeat",
            run_id=self._run_id,
            seconds=round(time.monotonic() - self.started, 3),
            rows_seen=counts,
            rows_seen_total=sum(counts.values()),
        )

    def run_started(self, report: SyncReport, tables: Sequence[str]) -> None:
        self._run_id = report.run_id
        self._emit(
            "start",
            run_id=report.run_id,
            warehouse=self.warehouse,
            tables=list(tables),
            started_at=report.started_at.isoformat(timespec="milliseconds"),
        )

    def table_finished(self, result: TableResult) -> None:
        self._told.add(result.table)
        self._emit("table", run_id=self._run_id, table=result.table, **result_fields(result))

    def sync_summary(self, outcome: SyncOutcome) -> None:
        self.outcome = outcome
        # tables the run never got to load (a failed walk, an interruption) are told here
        for name, fields in table_fields(outcome).items():
            if name not in self._told:
                self._emit("table", run_id=outcome.report.run_id, table=name, **fields)
        for note in outcome.notes:
            self._emit("note", message=note)

    def models_summary(self, result: ModelsResult, dataset: str) -> None:
        self._emit("models", **models_fields(result, dataset))

    def _workspace(self, name: str, fields: dict[str, Any]) -> None:
        self._emit("workspace", workspace=name, **fields)

    def workspace_check(self, name: str, report: AccessReport | None, error: str | None) -> None:
        if report is None:
            self._emit("check", workspace=name, ok=False, error=error)
            return
        self._emit("check", workspace=name, ok=report.ok, **_access_fields(report))

    def access_report(self, report: AccessReport) -> None:
        self._emit("check", **_access_fields(report))

    def snapshot_summary(self, result: SnapshotResult) -> None:
        self._emit("snapshot", **snapshot_fields(result))

    def snapshot_failed(self, path: Path, message: str) -> None:
        unknown = dict.fromkeys(("bytes", "seconds", "run_id", "include_raw"))
        self._emit("snapshot", ok=False, path=str(path), tables=[], **unknown, error=message)

    def _failed(self, kind: str, message: str) -> None:
        self._emit("error", kind=kind, message=message)

    def _finished(self, summary: dict[str, Any]) -> None:
        self._emit("summary", **summary)


def _access_fields(report: AccessReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in ("base_url", "scope", "reachable", "failures")}
