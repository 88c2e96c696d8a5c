"""One run of the source: its options, what the warehouse holds, its walk and its report.

Four separate things a run is given or makes, so none of them is written back into another:
`RunOptions` (the choices for this run), `KnownState` (read from the warehouse, `known.py`),
`SyncReport` (the outcome, `report.py`) and `Seams` (what tests replace). `SyncRun` holds one
of each, mints the run id once, and owns the one cancellation token that the walk and the HTTP
client share.

Who opens a run closes it. `drone-sync run` (`pipelines/`) opens it explicitly, after its own
repairs, and closes it when its last load is done; the plain source (`pipeline.run(drone_ops())`)
has no such owner, so the first of its tables to run opens it and the last selected table to
finish closes it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dlt
import httpx

from .config import SourceConfig
from .exceptions import DroneOpsError
from .http import DroneOpsClient
from .known import KnownState, read_known_state
from .report import SyncReport
from .run_state import RunRecord
from .tables.entities import ALL_TABLES
from .walk import ProgressCallback, WalkPlan, WorkspaceWalk
from .workspaces import DEFAULT_WORKSPACE

if TYPE_CHECKING:
    from .compare.changes import ChangeSet


def new_run_id() -> str:
    """The one way a run id is made: sortable by time, unique across machines."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunOptions:
    """Per-run choices that are not configuration (the CLI's flags)."""

    tables: tuple[str, ...] = ALL_TABLES
    allow_mass_delete: bool = False
    full_refresh: bool = False
    """Walk every delivery page and every project's jobs, whatever the warehouse holds."""


@dataclass(frozen=True)
class Seams:
    """What tests replace: the network (an `httpx.MockTransport`) and the retry waits."""

    transport: httpx.BaseTransport | None = None
    backoff_initial_seconds: float | None = None
    backoff_max_seconds: float | None = None


@dataclass
class SyncRun:
    """One run of the source over one workspace."""

    config: SourceConfig
    options: RunOptions = field(default_factory=RunOptions)
    progress: ProgressCallback | None = None
    spill_root: Path | None = None
    """Where the walk spills typed batches (default: the system temp dir)."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """The run's one cancellation token: a signal handler sets it to interrupt the run
    (unfinished tables load nothing); the walk and the HTTP client stop on it."""
    seams: Seams = field(default_factory=Seams)
    workspace: str = DEFAULT_WORKSPACE
    """Whose run this is, as its run-state rows say."""
    run_id: str = field(default_factory=new_run_id)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    known: KnownState | None = None
    walk: WorkspaceWalk | None = None
    record: RunRecord | None = None
    """What the run-state tables record of this run (`run_state.py`), once its tables are
    done: made by the run itself when the source opened it, by `drone-sync run` otherwise
    (which knows what its loads did)."""
    decided: dict[str, ChangeSet | None] = field(default_factory=dict, init=False, repr=False)
    """Each history table's change set, compared once per run (`table_loads.py`): by
    the table's extract, or before it by `drone-sync run`, which finishes a group that loads
    nothing without a dlt extract (`finish_quiet_tables`). None: the table loads nothing
    (its walk or a record check failed, or the mass-delete guard refused; the report says)."""
    report: SyncReport = field(init=False)
    _pending: set[str] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.report = SyncReport(self.run_id, self.started_at)

    def open(self, pipeline: dlt.Pipeline) -> None:
        """Reads what the warehouse holds through `pipeline` and opens the walk; the walk
        starts with the first table that waits for it."""
        with self._lock:
            if self.walk is not None:
                return
            self.known = read_known_state(
                pipeline,
                delivery_overlap_seconds=self.config.delivery_overlap_seconds,
                full_refresh=self.options.full_refresh,
            )
            self.walk = self._open_walk(self.known)

    def close(self) -> None:
        """Stops a walk still under way and removes its spill files."""
        with self._lock:
            walk, self.walk = self.walk, None
        if walk is not None:
            walk.close()

    def __enter__(self) -> SyncRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def interrupted(self) -> bool:
        return self.cancel.is_set()

    def table_started(self, selected: Iterable[str]) -> None:
        """Called by each table as it starts: a run nobody opened (the plain source) is opened
        here, through the pipeline dlt is running, and closes when every table `selected` for
        this extraction has finished."""
        self.open(dlt.current.pipeline())
        with self._lock:
            # the run-state resources follow the tables; they are not tables of the walk
            self._pending = {name for name in selected if name in ALL_TABLES}

    def table_finished(self, table: str) -> None:
        """Called by each table as it ends. A run the source opened itself closes after the
        last selected table and then raises if any table failed or was refused, as a dlt
        source does: dlt fails the extract, so nothing of this run is loaded and the warehouse
        stays as it was (the next run compares again)."""
        with self._lock:
            if self._pending is None:
                return
            self._pending.discard(table)
            done = not self._pending
        if not done:
            return
        self.record = self._record()
        self.close()
        problems = [
            result.error or f"{result.table}: {result.status}"
            for result in self.report.tables.values()
            if result.status not in ("success", "skipped")
        ]
        if problems:
            raise DroneOpsError("; ".join(problems))

    def _record(self) -> RunRecord:
        """The run as the source records it: every table extracted, so its rows load in the
        same package as the tables (a failed table raises below, and nothing loads). The marks
        move only when the deliveries' walk succeeded."""
        walk = self.walk
        assert walk is not None, "a run records itself before its walk closes"
        deliveries = self.report.tables.get("webhook_deliveries")
        moved = deliveries is not None and deliveries.status == "success"
        marks = dict(walk.webhooks.completed_marks) if moved else {}
        return RunRecord(self.report, self.workspace, list(walk.issues), marks)

    def _open_walk(self, known: KnownState) -> WorkspaceWalk:
        config, seams = self.config, self.seams
        backoff: dict[str, Any] = {}
        if seams.backoff_initial_seconds is not None:
            backoff["backoff_initial_seconds"] = seams.backoff_initial_seconds
        if seams.backoff_max_seconds is not None:
            backoff["backoff_max_seconds"] = seams.backoff_max_seconds
        client = DroneOpsClient(
            config.base_url,
            config.api_key,
            max_workers=config.max_workers,
            timeout=config.timeout_seconds,
            max_attempts=config.max_attempts,
            retry_budget_seconds=config.retry_budget_seconds,
            max_requests_per_second=config.max_requests_per_second,
            transport=seams.transport,
            cancel=self.cancel,
            key_setting=config.key_setting,
            **backoff,
        )
        return WorkspaceWalk(
            client,
            WalkPlan.for_run(config, self.options.tables, known),
            run_id=self.run_id,
            max_workers=config.max_workers,
            cancel=self.cancel,
            progress=self.progress,
            spill_root=self.spill_root,
        )
