"""The code location: `dagster dev` from the repository root finds it through `[tool.dagster]`
in pyproject.toml (docs/fleet.md#dagster has the one command).

Definitions are built when Dagster loads them (`@dg.definitions`), not when this module is
imported: the partitions are the workspaces configured at that moment, and the dbt manifest is
prepared then (`manifest.py`).
"""

from __future__ import annotations

import dagster as dg

from .alerts import run_failed_alert
from .automation import SYNC_JOB_NAME, models_sensor, sync_schedule
from .manifest import prepared_project
from .models import build_models_assets, dbt_resource
from .raw_assets import build_sync_assets, workspace_partitions
from .warehouse import DroneSyncWarehouse


def build_definitions(
    warehouse: DroneSyncWarehouse | None = None,
    executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    """Everything of the code location, for the warehouse given (default: the CLI's), with
    Dagster's in-process executor unless another is given.

    Why in-process: the run launcher already starts each run in a process of its own, and each
    job here is one step (the sync's multi-asset, the dbt build), so the multiprocess executor
    would only start a second process that loads the whole code location again to run it."""
    partitions = workspace_partitions()
    sync = build_sync_assets(partitions)
    models = build_models_assets(prepared_project())
    sync_job = dg.define_asset_job(
        SYNC_JOB_NAME,
        selection=dg.AssetSelection.assets(sync),
        partitions_def=partitions,
        description="One workspace's sync; the partition is the workspace.",
    )
    return dg.Definitions(
        assets=[sync, models],
        jobs=[sync_job],
        schedules=[sync_schedule(partitions)],
        sensors=[models_sensor(models), run_failed_alert],
        resources={"warehouse": warehouse or DroneSyncWarehouse(), "dbt": dbt_resource()},
        executor=executor or dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` and Dagster's run workers load."""
    return build_definitions()
