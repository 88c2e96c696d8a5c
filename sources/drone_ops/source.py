"""The dlt source: one resource per warehouse table, all fed by one shared workspace walk.

A plain dlt source (docs/plain-source.md): settings from dlt's config (`config.py`), what the
warehouse holds read through the running pipeline (`known.py`), so the contract holds on any
destination; it records its own runs (`run_state.py`) in resources that follow the tables, so
every driver keeps them. `drone-sync run` runs this same source group by group.

History tables are scd2 with explicit change sets: dlt's `destination_scope` limits retirement
to the ids in the load, so an unchanged entity is never touched. A table the warehouse does not
have yet is loaded by a plain append: there is nothing to merge with, and the merge's staging
copy and joins cost more than the load itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.schema.typing import (
    DEFAULT_VALIDITY_COLUMN_NAMES,
    TColumnSchema,
    TDeleteInsertStrategyDict,
    TScd2StrategyDict,
    TWriteDispositionConfig,
)
from dlt.extract.resource import DltResource

from . import settings
from .config import checked_tables
from .events import EVENTS_COLUMNS, EVENTS_TABLE
from .run import RunOptions, SyncRun
from .run_state import RUN_STATE_TABLES, record_resources
from .table_loads import TableLoads
from .tables.entities import ENTITIES, Entity
from .tables.schema import TIMESTAMP_HINT, dlt_columns
from .workspaces import DEFAULT_WORKSPACE, read_workspace_config

RECORD_RESOURCES: tuple[str, ...] = (*RUN_STATE_TABLES, EVENTS_TABLE)
"""What the source writes after its tables, whoever drives it: the run-state tables
(`run_state.py`) and the receiver's `_webhook_events`, empty until events arrive, so the
models that read it build on any warehouse."""

SCD2_DISPOSITION: TScd2StrategyDict = {
    "disposition": "merge",
    "strategy": "scd2",
    "row_version_column_name": settings.ROW_HASH_COLUMN,
    # tombstones reach the staging table (so their ids are in scope and get retired) but are
    # never inserted as versions
    "source_filter": f'NOT "{settings.TOMBSTONE_COLUMN}"',
    "destination_scope": '"id" IN (SELECT "id" FROM {staging_table})',
}
MERGE_ON_ID: TDeleteInsertStrategyDict = {"disposition": "merge", "strategy": "delete-insert"}
# declared as the scd2 merge declares them, so a table first loaded by append is the table the
# merge would have created, and later runs merge into it
VALIDITY_COLUMNS: dict[str, TColumnSchema] = {
    name: {**TIMESTAMP_HINT, "nullable": True} for name in DEFAULT_VALIDITY_COLUMN_NAMES
}


@dlt.source(name=settings.SOURCE_NAME, max_table_nesting=0)
def drone_ops(
    tables: Sequence[str] | None = None,
    allow_mass_delete: bool = False,
    full_refresh: bool = False,
    workspace: str = DEFAULT_WORKSPACE,
    run: Any = None,
) -> list[DltResource]:
    """Projects, jobs, job types, team, webhooks, deliveries and users of one workspace (the
    arguments: docs/plain-source.md). `run` is a `SyncRun` made by `drone-sync` (typed `Any`
    for dlt, which builds a config spec from the signature); without it the source makes its
    own run, which opens when dlt first asks it for rows."""
    require_dlt_settings()
    if run is None:
        options = RunOptions(checked_tables(tables), allow_mass_delete, full_refresh)
        run = SyncRun(read_workspace_config(workspace), options, workspace=workspace)
    assert isinstance(run, SyncRun)
    sync = TableLoads(run)
    resources = [_table(sync, name) for name in ENTITIES if name in run.options.tables]
    # after the tables (dlt extracts in order: `fifo`), so they record what the tables did;
    # `drone-sync run` loads them itself after its last load (`RECORD_RESOURCES`)
    return [*resources, *record_resources(lambda: run.record), empty_events_table()]


def require_dlt_settings() -> None:
    """Sets the dlt settings the source's contract depends on (`settings.REQUIRED_DLT_SETTINGS`)
    unless the environment already sets them; dlt reads them when it extracts and normalizes."""
    for name, value in settings.REQUIRED_DLT_SETTINGS.items():
        os.environ.setdefault(name, value)


def finish_quiet_tables(run: SyncRun, tables: Sequence[str]) -> bool:
    """Finishes `tables` of an opened run without dlt when none of them has anything to load,
    recording each outcome as its extract would have; returns whether it did (False, having
    finished none, when one loads something: dlt then extracts them).

    Why: dlt's extract of a group that yields nothing still merges schemas, writes a load
    package and syncs state (docs/sync-design.md, "A load group with nothing to load")."""
    sync = TableLoads(run)
    if not sync.loads_nothing(tables):
        return False
    sync.finish_unloaded(tables)
    for table in tables:
        run.table_finished(table)
    return True


def delivery_wave(run: SyncRun) -> DltResource:
    """The deliveries typed since the last load, as one resource: what `drone-sync run` loads
    in waves while the delivery-log chains still walk."""
    sync = TableLoads(run)
    return _one_row_per_id(sync, ENTITIES["webhook_deliveries"], sync.delivery_wave)


def empty_events_table() -> DltResource:
    """`_webhook_events` with no rows, declared as the receiver's batches write it: created by
    every run, so the models that read it work before any event was received."""
    return dlt.resource(
        [dlt.mark.materialize_table_schema()],
        name=EVENTS_TABLE,
        write_disposition=MERGE_ON_ID,
        primary_key=["delivery_id"],
        columns=EVENTS_COLUMNS,
    )


def _table(sync: TableLoads, table: str) -> DltResource:
    """One table's resource: a history table (scd2), or one row per id (deliveries, users)."""
    entity = ENTITIES[table]
    if entity.history:
        return _history_table(sync, entity)
    rows = sync.delivery_rows if table == "webhook_deliveries" else sync.user_rows
    return _one_row_per_id(sync, entity, rows)


def _history_table(sync: TableLoads, entity: Entity) -> DltResource:
    rows = _rows_of(sync, entity, SCD2_DISPOSITION, lambda: sync.entity_rows(entity.table))
    return dlt.resource(
        rows,
        name=entity.table,
        write_disposition=_disposition(sync, entity, SCD2_DISPOSITION),
        columns={**dlt_columns(entity.contract), **VALIDITY_COLUMNS},
    )


def _one_row_per_id(
    sync: TableLoads, entity: Entity, rows: Callable[[], Iterator[pa.Table]]
) -> DltResource:
    return dlt.resource(
        _rows_of(sync, entity, MERGE_ON_ID, rows),
        name=entity.table,
        write_disposition=_disposition(sync, entity, MERGE_ON_ID),
        primary_key=list(entity.key),
        columns=dlt_columns(entity.contract),
    )


def _disposition(
    sync: TableLoads, entity: Entity, merge: TWriteDispositionConfig
) -> TWriteDispositionConfig:
    """The merge for a table the warehouse has; a plain append for its first load (a run that
    has not read the warehouse yet declares the merge: `_rows_of` switches it)."""
    known = sync.run.known
    return "append" if known is not None and entity.table not in known.existing else merge


def _rows_of(
    sync: TableLoads,
    entity: Entity,
    merge: TWriteDispositionConfig,
    rows: Callable[[], Iterator[pa.Table]],
) -> Iterator[Any]:
    """A table's rows between the run's hooks (`SyncRun.table_started`, `table_finished`); a
    run opened by its first table learns only then whether a table is new."""
    run = sync.run
    declared = _disposition(sync, entity, merge)
    run.table_started(dlt.current.source().selected_resources)
    try:
        actual = _disposition(sync, entity, merge)
        for batch in rows():
            if actual != declared:
                yield dlt.mark.with_hints(batch, dlt.mark.make_hints(write_disposition=actual))
                declared = actual
            else:
                yield batch
    finally:
        run.table_finished(entity.table)
