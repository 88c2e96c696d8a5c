"""One workspace's turn, owned by one object from its lock to its last step.

A turn is: the run lock (taken here and nowhere else; every lock and their order:
`run/lock.py`), the repair of whatever a crashed or killed turn left (a moved working folder,
an interrupted load's files, pending packages, rows a replayed load wrote twice), the
workspace's dlt pipeline opened once, and then what happens in the turn: sync, build the
models, publish the snapshot. `drone-sync run`, `drone-sync models`, `run_sync` (scripts,
benchmarks, the demo and Dagster's partitions) are each a few lines over it, so they cannot
differ in what they lock, repair or record.

The event applier (`listen/apply.py`) takes no turn: it writes each batch in one SQL
transaction under the dataset's write lock (`Target.write_lock`) alone, between a turn's
loads: a run holds events back for one of its loads at a time, and waits for one batch at
most.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import ExitStack

import dlt

from drone_ops_sync.sources.drone_ops import SourceConfig, read_source_config
from drone_ops_sync.sources.drone_ops.internal import (
    ProgressCallback,
    RunOptions,
    Seams,
    SyncRun,
    checked_tables,
    require_dlt_settings,
)

from .run.destination import check_target
from .run.disk_full import disk_full_as_error
from .run.door import KeptFile, duckdb_busy_as, ensure_destination_reachable, step
from .run.lock import warehouse_lock
from .run.recovery import (
    finish_pending,
    forget_moved_working_folders,
    open_pipeline,
    remove_leftovers,
)
from .run.sync import RunObserver, SyncOutcome, sync_in_turn
from .run.target import Target
from .run.warehouse import remove_replayed_rows


class Session:
    """A workspace's turn: `with Session(target) as session:` takes the run lock (or raises
    `WarehouseBusy` naming its holder, before anything changes) and releases it when the block
    ends, however it ends. Notes for the run's summary (a lock taken over, a repair) collect
    in `notes`."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.notes: list[str] = []
        self._stack = ExitStack()
        self._pipeline: dlt.Pipeline | None = None
        self._ready = False
        self.file = KeptFile(target.duckdb_file())
        """The DuckDB file, held open across the turn's steps that follow one another
        (`run/door.py`); let go before the models and when the turn ends."""

    def __enter__(self) -> Session:
        lock = warehouse_lock(self.target.lock_path(), self.notes)
        with disk_full_as_error(self.target):
            self._stack.enter_context(lock)
        # let go before the run lock (the access lock comes after it in the lock order)
        self._stack.callback(self.file.release)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def ready(self) -> None:
        """Checks, once per turn, that the warehouse is free (no other program holds the DuckDB
        file: the turn's first step opens it, `KeptFile`) and reachable, before the turn
        changes anything."""
        if self._ready:
            return
        with step(self.target, self.file):
            ensure_destination_reachable(self.target)
        self._ready = True

    def pipeline(self) -> dlt.Pipeline:
        """The workspace's dlt pipeline, opened once per turn, once the warehouse is `ready`
        and what a crashed turn left is repaired."""
        if self._pipeline is None:
            self.ready()
            with step(self.target, self.file):
                self._pipeline = self._repaired()
        return self._pipeline

    def _repaired(self) -> dlt.Pipeline:
        self.notes.extend(forget_moved_working_folders(self.target))
        pipeline, reopened = open_pipeline(self.target)
        if reopened:
            self.notes.append(reopened)
        leftovers = remove_leftovers(self.target, pipeline)
        if leftovers:
            self.notes.append(f"removed what an interrupted run left: {', '.join(leftovers)}")
        note = finish_pending(pipeline)
        if note:
            self.notes.append(note)
        replayed = remove_replayed_rows(pipeline)
        if replayed:
            self.notes.append(f"removed {replayed} rows a replayed load had written twice")
        return pipeline

    def sync(
        self,
        config: SourceConfig,
        options: RunOptions,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        seams: Seams | None = None,
        observer: RunObserver | None = None,
    ) -> SyncOutcome:
        """One sync in this turn; never raises for a failed table (its outcome says). `cancel`,
        once set (by a signal handler), interrupts it: tables whose walk had not finished load
        nothing and are recorded as `interrupted`. `observer` hears of the start (before the
        repairs, which the pipeline's opening makes) and of each table as its group ends."""
        self.ready()
        run = SyncRun(
            config,
            options,
            progress=progress,
            spill_root=self.target.spill_root(),
            cancel=cancel if cancel is not None else threading.Event(),
            seams=seams if seams is not None else Seams(),
            workspace=self.target.workspace,
            loads_by_group=True,
        )
        if observer is not None:
            observer.run_started(run.report, options.tables)
        with duckdb_busy_as(self.target.duckdb_file()):
            try:
                outcome = sync_in_turn(self.target, self.pipeline(), self.file, run, observer)
            finally:
                # before the models lock, earlier in the lock order, is taken
                self.file.release()
        outcome.notes[:0] = self.notes
        self.notes = outcome.notes
        return outcome

    def for_models(self) -> Target:
        """The target the models are built in (every workspace's raw tables), the turn's DuckDB
        file let go first: the models lock comes before it in the lock order."""
        self.file.release()
        return self.target.models_target()


def run_sync(
    target: Target,
    *,
    config: SourceConfig | None = None,
    tables: Sequence[str] | None = None,
    full_refresh: bool = False,
    allow_mass_delete: bool = False,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    seams: Seams | None = None,
) -> SyncOutcome:
    """One sync in a turn of its own, for callers that hold nothing yet (scripts, benchmarks,
    the demo, Dagster's partitions); never raises for a failed table.

    Raises `ConfigError` for a bad setting and `WarehouseBusy` when another run or process
    holds the warehouse, in both cases before anything is changed, and `DiskFull` when a disk
    refused a write (`run/disk_full.py`: the run stopped there, nothing half-loaded)."""
    require_dlt_settings()
    config = config if config is not None else read_source_config()
    options = RunOptions(checked_tables(tables), allow_mass_delete, full_refresh)
    check_target(target)
    with Session(target) as session:
        return session.sync(config, options, progress=progress, cancel=cancel, seams=seams)
