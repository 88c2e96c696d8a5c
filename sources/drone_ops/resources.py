"""The dlt source: one resource per warehouse table, all fed by one shared workspace walk.

Each table below reads like what it produces: its name, how it is written, its columns. The
walk is opened and closed by the caller (`pipelines/sync.py`: `with open_walk(...) as walk`);
the source only reads it. History tables are scd2 with explicit change sets: dlt's
`destination_scope` limits retirement to the ids in the load, so an unchanged entity is never
touched and a run with no change loads nothing at all. A table the warehouse does not have yet
is loaded by a plain append: there is nothing to merge with, and the merge's staging copy and
joins cost more than the load itself.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from .config import SourceConfig, checked_tables
from .entities import ENTITIES, Entity
from .run import RunOptions
from .schema import dlt_columns
from .table_sync import TableSync
from .walk import WorkspaceWalk

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
    name: {"data_type": "timestamp", "timezone": True, "precision": 6, "nullable": True}
    for name in DEFAULT_VALIDITY_COLUMN_NAMES
}


@dlt.source(name=settings.SOURCE_NAME, max_table_nesting=0)
def drone_ops(walk: Any, config: Any, run: Any, delivery_wave: bool = False) -> list[DltResource]:
    """Projects, jobs, job types, team, webhooks, deliveries and users of one workspace.

    `walk` (a `WorkspaceWalk`), `config` (a checked `SourceConfig`) and `run` (`RunOptions`)
    come from `pipelines/sync.py`, which reads every setting once, before anything starts.
    With `delivery_wave` the source is one wave of deliveries: those typed since the last
    load, loaded while the chains still walk. (Typed `Any` for dlt, which builds a config spec
    from the signature.)"""
    assert isinstance(walk, WorkspaceWalk) and isinstance(config, SourceConfig)
    assert isinstance(run, RunOptions)
    sync = TableSync(walk, run, config.max_retire_share)
    if delivery_wave:
        entity = ENTITIES["webhook_deliveries"]
        return [_one_row_per_id(sync, entity, sync.delivery_wave())]
    wanted = set(checked_tables(run.tables))
    tables = (projects, jobs, job_types, team_members, webhooks, webhook_deliveries, users)
    return [table(sync) for table in tables if table.__name__ in wanted]


def projects(sync: TableSync) -> DltResource:
    """Active and archived projects, one version per change (scd2); `created_by` flattened to
    `created_by_id`, the creator itself becoming a `users` row."""
    return _history_table(sync, ENTITIES["projects"])


def jobs(sync: TableSync) -> DltResource:
    """Every project's jobs, one version per change; walked per project as project pages arrive
    (or, with `job_refresh_slices`, a rolling share of them)."""
    return _history_table(sync, ENTITIES["jobs"])


def job_types(sync: TableSync) -> DltResource:
    """Predefined and custom job types, one version per change."""
    return _history_table(sync, ENTITIES["job_types"])


def team_members(sync: TableSync) -> DltResource:
    """Team members with their roles (pilots among them), one version per change."""
    return _history_table(sync, ENTITIES["team_members"])


def webhooks(sync: TableSync) -> DltResource:
    """Webhooks, one version per change; each row comes from the webhook's own page."""
    return _history_table(sync, ENTITIES["webhooks"])


def webhook_deliveries(sync: TableSync) -> DltResource:
    """Delivery-log entries, one row per id, with the request payload parsed into columns;
    only entries newer than what the warehouse holds are walked."""
    return _one_row_per_id(sync, ENTITIES["webhook_deliveries"], sync.delivery_rows())


def users(sync: TableSync) -> DltResource:
    """Everyone who created a project or a webhook (a person or an API key), one row per id."""
    return _one_row_per_id(sync, ENTITIES["users"], sync.user_rows())


def _history_table(sync: TableSync, entity: Entity) -> DltResource:
    return dlt.resource(
        sync.entity_rows(entity.table),
        name=entity.table,
        write_disposition=_disposition(sync, entity, SCD2_DISPOSITION),
        columns={**dlt_columns(entity.contract), **VALIDITY_COLUMNS},
    )


def _one_row_per_id(sync: TableSync, entity: Entity, rows: Iterator[pa.Table]) -> DltResource:
    return dlt.resource(
        rows,
        name=entity.table,
        write_disposition=_disposition(sync, entity, MERGE_ON_ID),
        primary_key=list(entity.key),
        columns=dlt_columns(entity.contract),
    )


def _disposition(
    sync: TableSync, entity: Entity, merge: TWriteDispositionConfig
) -> TWriteDispositionConfig:
    """The merge for a table the warehouse has; a plain append for its first load."""
    return merge if entity.table in sync.options.known.existing else "append"
