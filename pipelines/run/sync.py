"""One sync in a workspace's turn (`pipelines/session.py` takes the lock and repairs): walk and
compare, load, record the run (`run_record.py`: the rows of the source's run-state tables,
`sources/drone_ops/run_state.py`, by SQL once dlt has made them)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import dlt
import pyarrow as pa
from dlt.pipeline.exceptions import PipelineStepFailed

from drone_ops_sync.sources.drone_ops import SyncReport, TableResult, drone_ops
from drone_ops_sync.sources.drone_ops.internal import (
    ENTITIES,
    LISTS,
    LOAD_GROUPS,
    WEBHOOKS,
    RunRecord,
    SyncRun,
    finish_quiet_tables,
)

from .delivery_waves import DeliveryWaves, record_marks_first
from .door import KeptFile, step
from .errors import root_cause
from .loaded_packages import prune_loaded_packages
from .run_record import record_run
from .run_trace import RunLoads
from .target import Target
from .warehouse import data_version


@dataclass
class SyncOutcome:
    report: SyncReport
    load_seconds: float = 0.0
    total_seconds: float = 0.0
    load_error: str | None = None
    issues: int = 0
    database: Path | None = None
    notes: list[str] = field(default_factory=list)
    data_version: str | None = None
    """The warehouse's data version after the run (`warehouse.data_version`)."""
    delivery_waves: int = 0
    """Loads of deliveries made while the chains still walked (`delivery_waves.py`)."""
    pipeline_name: str | None = None
    """dlt's pipeline name for this warehouse (`Target.pipeline_name`), for `dlt pipeline`."""
    finished_at: datetime | None = None
    """When the run ended, as its `_sync_runs` rows record it (taken under the run lock, so two
    runs of one workspace never show overlapping times); None when the run was not recorded."""

    @property
    def ok(self) -> bool:
        return self.load_error is None and self.report.ok


class RunObserver(Protocol):
    """Who wants to hear of a run while it goes on, not only from its outcome: the JSON
    events, the lineage events. Called on the run's own thread; must not raise."""

    def run_started(self, report: SyncReport, tables: Sequence[str]) -> None:
        """The run has its id and is about to read and load the warehouse."""

    def table_finished(self, result: TableResult) -> None:
        """A table's load group committed (or failed, or was skipped as interrupted)."""


def sync_in_turn(
    target: Target,
    pipeline: dlt.Pipeline,
    file: KeptFile,
    run: SyncRun,
    observer: RunObserver | None,
) -> SyncOutcome:
    """Walks, compares, loads and records `run`, opened in a turn (`pipelines/session.py`)
    that holds the run lock and repaired what a crashed turn left; `file` is the turn's DuckDB
    file, kept open across the steps that follow one another (`door.py`)."""
    started = time.monotonic()
    # Arrow's default pool (jemalloc/mimalloc) keeps freed batches mapped; the system pool
    # hands them back. This reaches pyarrow's Python functions only: the C++ default is
    # chosen when pyarrow is imported (`run/memory.py`, from this package's `__init__`)
    pa.set_memory_pool(pa.system_memory_pool())
    report = run.report
    outcome = SyncOutcome(report=report, database=target.duckdb_file())
    outcome.pipeline_name = pipeline.pipeline_name
    loads = RunLoads(target, pipeline)
    load_started = time.monotonic()
    tables = run.options.tables
    # the run's dlt source, made the first time a group has something to load: building it
    # resolves its settings, so a quiet run (its record written by SQL) never makes it
    source = functools.cache(lambda: drone_ops(run=run))
    # opened here, after the repairs, so the walk goes on while the groups load; it ends with
    # its last table (`SyncRun`), or at the end of this block when an error escaped
    with run:
        with step(target, file, pipeline):
            run.open(pipeline)
            record_marks_first(loads, run)
        file.release()  # the walk may take long: the file is nobody's meanwhile
        marks = _load_groups(loads, run, source, outcome, observer)
        interrupted = run.interrupted
    if interrupted:
        report.interrupt_unloaded(tables)
        marks = {}
    outcome.load_seconds = time.monotonic() - load_started
    outcome.issues = len(run.issues)
    outcome.total_seconds = time.monotonic() - started
    finished = datetime.now(UTC)
    record = RunRecord(report, target.workspace, run.issues, marks, finished)
    with step(target, file, pipeline):
        note = record_run(loads, run, source, record)
    if note is None:
        outcome.finished_at = finished
    else:
        outcome.notes.append(note)
    traced = loads.save_trace()
    # after every run, not only a clean one: a table failing run after run would otherwise
    # let the packages grow unbounded; the newest, and every one this run's trace names, are kept
    prune_loaded_packages(pipeline, traced=traced)
    with step(target, file, pipeline):
        outcome.data_version = data_version(pipeline)
    return outcome


def _load_groups(
    loads: RunLoads,
    run: SyncRun,
    source: Callable[[], Any],
    outcome: SyncOutcome,
    observer: RunObserver | None,
) -> dict[str, int]:
    """Loads each group of tables as its part of the walk ends (deliveries in waves while the
    walk goes on, the list tables as soon as their part is done, the rest once the chains
    end); a group with nothing to load is finished without dlt (`finish_quiet_tables`).
    Returns the delivery marks the run may record."""
    report = run.report
    tables = run.options.tables
    marks: dict[str, int] = {}
    waves = DeliveryWaves(loads, run) if "webhook_deliveries" in tables else None
    for group in LOAD_GROUPS:
        selected = [name for name in group if name in tables]
        if not selected:
            continue
        if waves is not None:
            # the walk stage the group waits for (its tables' last)
            stage = WEBHOOKS if any(WEBHOOKS in ENTITIES[n].stages for n in group) else LISTS
            waves.load_while(stage, only_when_idle=stage == LISTS)
        if run.interrupted:
            run.skip(selected)
            loaded = False
        elif finish_quiet_tables(run, selected):
            report.load_committed(selected)
            loaded = True
        else:
            loaded = _load(loads, source().with_resources(*selected), report, selected, outcome)
        if observer is not None:  # each table of the group, as the group ends
            for name in selected:
                observer.table_finished(report.table(name))
        if "webhook_deliveries" in selected and loaded and waves and waves.error is None:
            # every entry the completed chains walked is loaded: their marks may move
            marks = run.completed_marks
    if waves is not None:
        outcome.delivery_waves = waves.count
        if waves.error is not None and outcome.load_error is None:
            outcome.load_error = waves.error
    return marks


def _load(
    loads: RunLoads,
    source: Any,
    report: SyncReport,
    tables: Sequence[str],
    outcome: SyncOutcome,
) -> bool:
    """Extracts, normalizes and loads one group of tables; a failure fails only that group.
    Returns whether the group loaded."""
    try:
        loads.run(source)
    except PipelineStepFailed as exc:
        error = f"{exc.step} failed: {root_cause(exc)}"
        outcome.load_error = error if outcome.load_error is None else outcome.load_error
        report.load_failed(tables, error)
        return False
    report.load_committed(tables)
    return True
