"""What one run is given: its options, and what the warehouse already holds.

Filled by the pipeline layer (`pipelines/sync.py` builds both and reads the warehouse), read by
the walk and the resources; nothing here is written back by the source.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pyarrow as pa

from . import settings
from .entities import ALL_TABLES
from .report import SyncReport

ProgressCallback = Callable[[str, int], None]
"""Called with (table, rows) as the walk sees rows, for a live progress line."""


@dataclass
class DeliveryMark:
    """What the warehouse already holds of one webhook's delivery log."""

    stop_before_ms: int
    """Entries older than this are loaded already; the walk stops when it reaches them."""
    known_ids: frozenset[str] = frozenset()
    """Ids loaded at or after `stop_before_ms` (the overlap window), skipped when seen again."""
    newest_ms: int | None = None
    """The mark itself: everything created up to it is loaded (`stop_before_ms` is it minus
    the overlap). A chain that walks nothing new keeps it."""


@dataclass
class KnownState:
    """What the warehouse holds before the run; read by the pipeline layer."""

    current: dict[str, pa.Table] = field(default_factory=dict)
    """Per entity table: the `Entity.current_columns` of its current rows."""
    delivery_marks: dict[str, DeliveryMark] = field(default_factory=dict)
    marks_recorded: bool = True
    """Whether the marks come from `_sync_delivery_marks`. False for a warehouse last synced
    before deliveries loaded in waves: its marks are read from the deliveries themselves, and
    recorded before anything else is loaded, so no wave ever runs on marks that a partial
    load could move."""
    users: pa.Table | None = None
    """`id`, `_row_hash` of the users table."""
    existing: set[str] = field(default_factory=set)
    """Tables the warehouse already has; the others are loaded by a plain append."""
    job_syncs: int | None = None
    """Successful `jobs` syncs so far (picks a rolling refresh's slice); None when this run
    must walk every project's jobs (no history yet, or `--full-refresh`)."""


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


@dataclass
class RunOptions:
    """Per-run choices that are not configuration: set by the CLI for one run."""

    run_id: str = field(default_factory=new_run_id)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    tables: Sequence[str] = ALL_TABLES
    known: KnownState = field(default_factory=KnownState)
    allow_mass_delete: bool = False
    progress: ProgressCallback | None = None
    report: SyncReport | None = None
    """Where the resources record each table's outcome (a new one when not given)."""
    transport: httpx.BaseTransport | None = None
    """Replaces the network in unit tests (httpx.MockTransport)."""
    spill_root: Path | None = None
    """Where the walk spills typed batches (default: the system temp dir); the pipeline layer
    puts it beside the pipeline's working folder, where a later run removes what a killed
    run left."""
    stop: threading.Event | None = None
    """Set (by a signal handler) to interrupt the run: unfinished tables load nothing."""
    delivery_wave_rows: int = settings.DELIVERY_WAVE_ROWS
    """Typed deliveries that make the pipeline load a wave while the chains still walk."""

    def __post_init__(self) -> None:
        if self.report is None:
            self.report = SyncReport(self.run_id, self.started_at)
