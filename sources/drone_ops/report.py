"""What a run did, per table: filled in by the resources, read by the CLI and `_sync_runs`."""

from __future__ import annotations

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
