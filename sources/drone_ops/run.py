"""One run of the source: its options, what the warehouse holds, its walk and its report.

`RunOptions`, `KnownState` (`known.py`), `SyncReport` (`report.py`) and `Seams` are kept apart,
so none is written back into another; `SyncRun` holds one of each, mints the run id once and
owns the one cancellation token the walk and the HTTP client share. It owns its lifecycle
whatever drives it: opened through the pipeline that loads it, ended by its last table, since
dlt offers a source no hook at the end of an extract (docs/architecture.md, "One owner per
lifecycle").
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import dlt
import httpx

from . import settings
from .compare.changes import ChangeSet
from .config import SourceConfig
from .exceptions import DroneOpsError
from .http import DroneOpsClient
from .known import KnownState, read_known_state
from .report import SyncReport
from .run_state import RunRecord
from .tables.breaches import Issue
from .tables.entities import ALL_TABLES
from .walk import ProgressCallback, WalkPlan, WorkspaceWalk
from .workspaces import DEFAULT_WORKSPACE


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
    """What tests replace: the network (an `httpx.MockTransport`), the retry waits, and how
    many typed deliveries make a wave load while the chains still walk (`drone-sync run`)."""

    transport: httpx.BaseTransport | None = None
    backoff_initial_seconds: float = settings.DEFAULT_BACKOFF_INITIAL_SECONDS
    backoff_max_seconds: float = settings.DEFAULT_BACKOFF_MAX_SECONDS
    delivery_wave_rows: int = settings.DELIVERY_WAVE_ROWS


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
    loads_by_group: bool = False
    """Loaded group by group (`drone-sync run`) rather than in one extract: a failed table
    then fails only its group, so the run neither raises nor records itself when it ends."""
    run_id: str = field(default_factory=new_run_id)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    known: KnownState | None = None
    walk: WorkspaceWalk | None = None
    record: RunRecord | None = None
    """What the run-state tables record of this run (`run_state.py`), once its tables are
    done: made by the run itself when loaded in one extract, else by its driver."""
    decided: dict[str, ChangeSet | None] = field(default_factory=dict, init=False, repr=False)
    """Each history table's change set, compared once per run (`table_loads.py`); None: the
    table loads nothing (its walk or a record check failed, or the guard refused)."""
    report: SyncReport = field(init=False)
    issues: list[Issue] = field(default_factory=list, init=False, repr=False)
    """The contract issues the walk found, kept when the walk closes (`_sync_issues`)."""
    _pending: set[str] = field(default_factory=set, init=False, repr=False)
    _marks: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _ended: bool = field(default=False, init=False, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.report = SyncReport(self.run_id, self.started_at)

    def open(self, pipeline: dlt.Pipeline) -> None:
        """Reads what the warehouse holds through `pipeline` and opens the walk, once; every
        table of the run is pending until it finishes."""
        with self._lock:
            if self.walk is not None or self._ended:
                return
            self.known = read_known_state(
                pipeline,
                delivery_overlap_seconds=self.config.delivery_overlap_seconds,
                full_refresh=self.options.full_refresh,
            )
            self.walk = self._open_walk(self.known)
            self._pending = set(self.options.tables)

    def close(self) -> None:
        """Ends the run: stops a walk still under way and removes its spill files, keeping
        what the run's record needs of it (its issues, the delivery marks it reached)."""
        with self._lock:
            walk, self.walk, self._ended = self.walk, None, True
        if walk is None:
            return
        walk.close()
        with self._lock:
            self.issues = list(walk.issues)
            self._marks = dict(walk.webhooks.completed_marks)
            self.report.issues = len(self.issues)

    def __enter__(self) -> SyncRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def interrupted(self) -> bool:
        return self.cancel.is_set()

    @property
    def completed_marks(self) -> dict[str, int]:
        """Each webhook's newest delivery whose chain reached known ground: where its next
        walk may stop, once every delivery this run walked is loaded (`delivery_waves.py`)."""
        with self._lock:
            walk = self.walk
            return dict(walk.webhooks.completed_marks) if walk is not None else dict(self._marks)

    def table_started(self, selected: Iterable[str]) -> None:
        """Called by each table as dlt extracts it: a run no driver opened yet is opened here,
        through the pipeline dlt is running, and then waits only for the tables `selected`."""
        with self._lock:
            if self.walk is not None or self._ended:
                return
            self.open(dlt.current.pipeline())
            self._pending &= set(selected)

    def table_finished(self, table: str) -> None:
        """Called as each table finishes, however: the run ends after the last one. Loaded in
        one extract, it records itself then and raises if any table failed or was refused, so
        dlt fails the extract and nothing of this run is loaded."""
        with self._lock:
            if table not in self._pending:
                return
            self._pending.discard(table)
            if self._pending:
                return
            if not self.loads_by_group:
                self.record = self._record()
        self.close()
        problems = self.report.problems
        if problems and not self.loads_by_group:
            raise DroneOpsError("; ".join(problems))

    def skip(self, tables: Iterable[str]) -> None:
        """A stopped run skips `tables` (their load group had not started): the walk stops
        now, nothing partial loads, and each table finishes as interrupted."""
        with self._lock:
            if self.walk is not None:
                self.walk.interrupt()
        tables = list(tables)
        self.report.interrupt_unloaded(tables)
        for name in tables:
            self.table_finished(name)

    def walking(self, stage: str, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a stage of the walk; True while it still walks."""
        walk = self.walk
        return walk is not None and walk.walking(stage, timeout)

    def deliveries_waiting(self) -> int:
        """How many typed deliveries wait to load (a wave loads them while the chains walk)."""
        walk = self.walk
        return 0 if walk is None else walk.tables["webhook_deliveries"].loadable_rows()

    def deliveries_failed(self, error: DroneOpsError) -> None:
        """A wave of deliveries failed to load: the table fails with it, and the run records
        no delivery marks."""
        walk = self.walk
        if walk is not None:
            walk.tables["webhook_deliveries"].fail(error)

    def _record(self) -> RunRecord:
        """The run as the source records it, in the same package as its tables; the marks move
        only when the deliveries' walk succeeded."""
        walk = self.walk
        assert walk is not None, "a run records itself before its walk closes"
        deliveries = self.report.tables.get("webhook_deliveries")
        moved = deliveries is not None and deliveries.status == "success"
        marks = dict(walk.webhooks.completed_marks) if moved else {}
        return RunRecord(self.report, self.workspace, list(walk.issues), marks)

    def _open_walk(self, known: KnownState) -> WorkspaceWalk:
        config, seams = self.config, self.seams
        client = DroneOpsClient(
            config.base_url,
            config.api_key,
            max_workers=config.max_workers,
            timeout=config.timeout_seconds,
            max_attempts=config.max_attempts,
            retry_budget_seconds=config.retry_budget_seconds,
            max_requests_per_second=config.max_requests_per_second,
            max_requests_per_second_per_host=config.max_requests_per_second_per_host,
            transport=seams.transport,
            cancel=self.cancel,
            key_setting=config.key_setting,
            url_setting=config.url_setting,
            backoff_initial_seconds=seams.backoff_initial_seconds,
            backoff_max_seconds=seams.backoff_max_seconds,
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
