"""What a run did, per table: filled in by the resources, read by the CLI and `_sync_runs`.

A table's status changes only through the methods below, whoever learns the outcome (the
table's rows as the walk is compared, or the driver once the table's load group ended), so
every transition and its wording is in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

TableStatus = Literal["success", "failed", "refused", "skipped", "interrupted"]


@dataclass
class TableResult:
    table: str
    status: TableStatus = "skipped"
    rows_seen: int = 0
    new: int = 0
    changed: int = 0
    retired: int = 0
    requests: int = 0
    pages: int = 0
    retries: int = 0
    seconds: float = 0.0
    error: str | None = None
    scope: str | None = None
    """Set when the run compared only part of the table (a rolling job refresh)."""
    loaded: bool = False
    """Set by the pipeline layer once the load of this table's group committed."""

    def succeed(self) -> None:
        """The table's rows were compared and handed to the load."""
        self.status = "success"

    def fail(self, error: str, *, interrupted: bool = False) -> None:
        """The table loads nothing this run: its walk or a check failed, or a signal stopped it."""
        self.status = "interrupted" if interrupted else "failed"
        self.error = f"{self.table}: {error}"

    def refuse(self, error: str) -> None:
        """The mass-delete guard refused the table (`error` names the guard and the share)."""
        self.status = "refused"
        self.error = error

    def load_failed(self, error: str) -> None:
        """The load of the table's group failed: a table that had succeeded so far fails."""
        if self.status in ("success", "skipped"):
            self.fail(error)

    def interrupt_unloaded(self) -> None:
        """A stopped run never got to this table, or skipped its load."""
        if self.status == "skipped" or (self.status == "success" and not self.loaded):
            self.fail("the run was interrupted before this table was loaded", interrupted=True)

    def load_committed(self) -> None:
        """The load of the table's group (or its finish without one) went through."""
        self.loaded = self.status == "success"

    @property
    def wrote(self) -> bool:
        """Whether the run had anything to load for this table."""
        return bool(self.new or self.changed or self.retired)


@dataclass
class SyncReport:
    """Shared by the resources of one run; the pipeline layer adds the load outcome."""

    run_id: str
    started_at: datetime
    tables: dict[str, TableResult] = field(default_factory=dict)
    issues: int = 0

    def table(self, name: str) -> TableResult:
        return self.tables.setdefault(name, TableResult(name))

    @property
    def ok(self) -> bool:
        return all(result.status in ("success", "skipped") for result in self.tables.values())

    def load_committed(self, tables: Iterable[str]) -> None:
        """A group's load (or its finish without one) went through."""
        for name in tables:
            self.table(name).load_committed()

    def load_failed(self, tables: Iterable[str], error: str) -> None:
        """A group's load failed: each of its tables that had succeeded so far fails with it."""
        for name in tables:
            self.table(name).load_failed(error)

    def interrupt_unloaded(self, tables: Iterable[str]) -> None:
        """A stopped run: each of `tables` that it never got to or did not load is interrupted."""
        for name in tables:
            self.table(name).interrupt_unloaded()

    @property
    def problems(self) -> list[str]:
        """Why the run is not `ok`, one entry per table that failed, was refused or interrupted."""
        return [
            result.error or f"{result.table}: {result.status}"
            for result in self.tables.values()
            if result.status not in ("success", "skipped")
        ]
