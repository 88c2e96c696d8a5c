"""When things run: the syncs on a schedule, one run per workspace, and the models after them.

Why an automation condition and not a sensor of our own: Dagster evaluates it against the
asset graph, which already knows the dependencies and what is running. It is Dagster's
`eager()` less one clause: eager waits while any dependency is missing, and one workspace that
never loaded would hold the models of the whole fleet forever. Here the models build once a
tick's syncs have all ended, over every workspace that loaded, as `drone-sync run` does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import dagster as dg
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

SYNC_JOB_NAME = "drone_ops_sync_job"
SYNC_SCHEDULE_NAME = "drone_ops_every_30_minutes"
SYNC_CRON = "*/30 * * * *"
MODELS_SENSOR_NAME = "drone_ops_models_follow_syncs"
MODELS_SENSOR_INTERVAL_SECONDS = 30
WORKSPACES_PER_RUN = 25
"""The most workspaces one run syncs, in turn (`raw_assets.py`; docs/fleet.md#dagster)."""
PARALLEL_RUNS = 4
"""The fewest runs a tick starts when there are that many workspaces: the instance's
`max_concurrent_runs` (`.dagster/dagster.yaml`)."""


def models_follow_syncs() -> dg.AutomationCondition:
    """Build when a dependency was updated (a workspace's sync, or an upstream model
    requested in the same tick), once no dependency is in progress and no build is."""
    return (
        dg.AutomationCondition.any_deps_updated().since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("after the workspace syncs")


def batches(workspaces: Sequence[str], per_run: int, runs_at_least: int) -> list[list[str]]:
    """The workspaces cut into consecutive batches of at most `per_run`, and into at least
    `runs_at_least` (when there are that many), of sizes that differ by one at most."""
    runs = max(min(len(workspaces), runs_at_least), math.ceil(len(workspaces) / per_run))
    size, extra = divmod(len(workspaces), runs) if runs else (0, 0)
    cut, start = [], 0
    for n in range(runs):
        end = start + size + (1 if n < extra else 0)
        cut.append(list(workspaces[start:end]))
        start = end
    return cut


BATCH_TAG = "drone_ops/batch"
"""Names a run's workspaces (`first..last`): the instance runs one run per value at a time
(`.dagster/dagster.yaml`), so a tick's batch never overlaps the previous tick's still running,
wherever the runs execute (the sync's run lock only covers one machine)."""


def batch_request(batch: Sequence[str], run_key: str) -> dg.RunRequest:
    """One run of a batch: a partition range (consecutive keys of the static partitions), or a
    partition run for a batch of one."""
    tags = {BATCH_TAG: f"{batch[0]}..{batch[-1]}"}
    if len(batch) == 1:
        return dg.RunRequest(run_key=run_key, partition_key=batch[0], tags=tags)
    tags[ASSET_PARTITION_RANGE_START_TAG] = batch[0]
    tags[ASSET_PARTITION_RANGE_END_TAG] = batch[-1]
    return dg.RunRequest(run_key=run_key, tags=tags)


def sync_schedule(partitions: dg.PartitionsDefinition) -> dg.ScheduleDefinition:
    """Every 30 minutes (UTC), the workspaces in batches of at most `WORKSPACES_PER_RUN`, in
    at least `PARALLEL_RUNS` runs, so a small fleet still syncs in parallel and a large one
    pays a run's start once per batch. Stopped until turned on, so starting `dagster dev` to
    look around calls no API."""

    @dg.schedule(
        name=SYNC_SCHEDULE_NAME,
        cron_schedule=SYNC_CRON,
        job_name=SYNC_JOB_NAME,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="Syncs every configured workspace, one run each.",
    )
    def drone_ops_every_30_minutes(
        context: dg.ScheduleEvaluationContext,
    ) -> Iterator[dg.RunRequest]:
        moment = context.scheduled_execution_time
        tick = moment.isoformat() if moment else "now"
        workspaces = partitions.get_partition_keys()
        for batch in batches(workspaces, WORKSPACES_PER_RUN, PARALLEL_RUNS):
            yield batch_request(batch, f"{batch[0]}..{batch[-1]}@{tick}")

    return drone_ops_every_30_minutes


def models_sensor(models: dg.AssetsDefinition) -> dg.AutomationConditionSensorDefinition:
    """Evaluates `models_follow_syncs` for the models every 30 seconds; running by default, so
    the models follow whatever starts the syncs (the schedule, a launch from the UI)."""
    return dg.AutomationConditionSensorDefinition(
        MODELS_SENSOR_NAME,
        target=dg.AssetSelection.assets(models),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=MODELS_SENSOR_INTERVAL_SECONDS,
        description="Builds the dbt models once the workspaces' syncs have ended.",
    )
