"""The sync as Dagster assets: one multi-asset, partitioned by workspace, one asset per raw
table, keyed as dagster-dbt names the dbt sources (`drone_ops/<table>`), so the staging models
depend on them.

Why one partition per workspace, each with its own dlt pipeline name: a partition is
`run_sync(base.for_workspace(name))`, the same run as `drone-sync run --workspace <name>`, and
partitioned dlt assets that share a pipeline name clobber each other (docs/fleet.md#dagster).
So different workspaces run in parallel, the same one never twice at once (its run lock).

(No `from __future__ import annotations` here: Dagster reads the parameter annotations of the
asset function to find its config and resources, and cannot resolve them as strings.)
"""

from collections.abc import Generator, Iterator

import dagster as dg
from pydantic import Field

from drone_ops_sync.pipelines.exit_codes import EXIT_CONFIG, EXIT_FAILED
from drone_ops_sync.pipelines.run.dlt_tooling import link_for_dlt_cli
from drone_ops_sync.pipelines.run.lock import WarehouseBusy
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import (
    ALL_TABLES,
    ConfigError,
    DroneOpsError,
    read_workspace_config,
)
from drone_ops_sync.sources.drone_ops.internal import EVENTS_TABLE, configured_names, settings

from .automation import WORKSPACES_PER_RUN
from .outcomes import (
    batch_failure,
    loaded_tables,
    one_line,
    partition_failure,
    sync_failure,
    table_metadata,
)
from .warehouse import DroneSyncWarehouse

RAW_SOURCE = "drone_ops"
"""The dbt source's name in models/staging/_drone_ops__sources.yml."""
RAW_TABLES: tuple[str, ...] = (*ALL_TABLES, settings.RUNS_TABLE, EVENTS_TABLE)
"""What a partition's sync materializes: the tables, its run record and `_webhook_events`,
which the sync creates empty (the receiver writes its rows, beside Dagster): reported by the
sync so that its staging model is requested with the others, and the first automatic build on a
fresh warehouse finds it (docs/events.md)."""
SYNC_ASSETS_NAME = "drone_ops_sync"
RAW_GROUP = "drone_ops_raw"


def raw_table_key(table: str) -> dg.AssetKey:
    """A raw table's asset key; the dbt translator maps each dbt source to the same key."""
    return dg.AssetKey([RAW_SOURCE, table])


def workspace_partitions() -> dg.StaticPartitionsDefinition:
    """One partition per configured workspace (`sources.drone_ops.workspaces`), read when the
    definitions load: a workspace added to the config appears on the next reload."""
    return dg.StaticPartitionsDefinition(list(configured_names()))


class SyncRunConfig(dg.Config):
    """How long a partition waits when its workspace is busy (another run holds its lock)."""

    busy_retries: int = Field(default=5, description="retries while the workspace is busy")
    busy_wait_seconds: float = Field(default=60.0, description="seconds between those retries")


def build_sync_assets(partitions: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    """The multi-asset of every raw table: a run syncs the workspaces of its partitions."""

    @dg.multi_asset(
        name=SYNC_ASSETS_NAME,
        specs=[_raw_spec(table) for table in RAW_TABLES],
        partitions_def=partitions,
        can_subset=False,
        backfill_policy=dg.BackfillPolicy.multi_run(WORKSPACES_PER_RUN),
        description="The workspaces' syncs (drone-sync run --workspace <partition>), in turn.",
    )
    def drone_ops_sync(
        context: dg.AssetExecutionContext, config: SyncRunConfig, warehouse: DroneSyncWarehouse
    ) -> Iterator[dg.AssetMaterialization]:
        yield from sync_partitions(context, config, warehouse)

    return drone_ops_sync


def _raw_spec(table: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=raw_table_key(table),
        group_name=RAW_GROUP,
        kinds={"dlt"},
        # materialized per workspace as each sync ends (`sync_partitions`), not per run
        skippable=True,
        description=f"Raw table {table}, one schema per workspace (<dataset>_<workspace>)"
        " (docs/warehouse.md).",
    )


def sync_partitions(
    context: dg.AssetExecutionContext, config: SyncRunConfig, warehouse: DroneSyncWarehouse
) -> Iterator[dg.AssetMaterialization]:
    """Syncs the run's workspaces in turn, each as `drone-sync run --workspace <name>` would,
    and materializes each table of each workspace as its sync ends; then fails the step if any
    failed (`outcomes.py` has why each error ends as it does). One busy workspace retries the
    step after a wait: the others' syncs run again, and find nothing to load."""
    failures: list[dg.Failure] = []
    busy: list[str] = []
    for workspace in context.partition_keys:
        try:
            failure = yield from _sync_workspace(context, warehouse, workspace)
        except WarehouseBusy as exc:
            context.log.warning(one_line(f"workspace {workspace} is busy, retrying later: {exc}"))
            busy.append(workspace)
            continue
        if failure is not None:
            failures.append(failure)
    if busy:
        raise dg.RetryRequested(
            max_retries=config.busy_retries, seconds_to_wait=config.busy_wait_seconds
        )
    if failures:
        raise failures[0] if len(failures) == 1 else batch_failure(failures)


def _sync_workspace(
    context: dg.AssetExecutionContext, warehouse: DroneSyncWarehouse, workspace: str
) -> Generator[dg.AssetMaterialization, None, dg.Failure | None]:
    """One workspace's sync: yields its tables' materializations, returns its failure or
    None. Raises `WarehouseBusy`."""
    target = warehouse.base_target().for_workspace(workspace)
    try:
        outcome = run_sync(target, config=read_workspace_config(workspace))
    except ConfigError as exc:  # a bad setting, named: retrying cannot help
        return partition_failure(workspace, f"configuration error: {exc}", EXIT_CONFIG)
    except WarehouseBusy:
        raise
    except DroneOpsError as exc:  # it stopped the sync before it ran (the destination unreachable)
        return partition_failure(workspace, str(exc), EXIT_FAILED)
    # as after `drone-sync run`: `dlt pipeline <pipeline_name> info|trace|show` finds it
    tooling_note = link_for_dlt_cli(target)
    for note in [*outcome.notes, *([tooling_note] if tooling_note else [])]:
        context.log.info(one_line(f"workspace {workspace}: {note}"))
    for table in loaded_tables(outcome):
        yield dg.AssetMaterialization(
            asset_key=raw_table_key(table),
            partition=workspace,
            metadata=table_metadata(outcome, table, workspace, target.dataset),
        )
    return None if outcome.ok else sync_failure(outcome, workspace)
