"""When things run: the syncs on a schedule, one run per workspace, and the models after them.

Why an automation condition and not a sensor of our own: Dagster evaluates it against the
asset graph, which already knows the dependencies and what is running. It is Dagster's
`eager()` less one clause: eager waits while any dependency is missing, and one workspace that
never loaded would hold the models of the whole fleet forever. Here the models build once a
tick's syncs have all ended, over every workspace that loaded, as `drone-sync run` does.
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

SYNC_JOB_NAME = "drone_ops_sync_job"
SYNC_SCHEDULE_NAME = "drone_ops_every_30_minutes"
SYNC_CRON = "*/30 * * * *"
MODELS_SENSOR_NAME = "drone_ops_models_follow_syncs"
MODELS_SENSOR_INTERVAL_SECONDS = 30


def models_follow_syncs() -> dg.AutomationCondition:
    """Build when a dependency was updated (a workspace's sync, or an upstream model
    requested in the same tick), once no dependency is in progress and no build is."""
    return (
        dg.AutomationCondition.any_deps_updated().since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("after the workspace syncs")


def sync_schedule(partitions: dg.PartitionsDefinition) -> dg.ScheduleDefinition:
    """Every 30 minutes (UTC), one run per workspace partition, so the workspaces run in
    parallel and one's failure is its alone. Stopped until turned on, so starting `dagster
    dev` to look around calls no API."""

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
        tick = context.scheduled_execution_time
        for workspace in partitions.get_partition_keys():
            yield dg.RunRequest(
                run_key=f"{workspace}@{tick.isoformat() if tick else 'now'}",
                partition_key=workspace,
            )

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
