"""A failed run, told in one line: through the project's alert hook when one is configured
(`runtime.slack_incoming_hook`, `pipelines/observe/alerts.py`), and in the sensor's log always.

Why the steps' own failure lines: a partition's step fails with the sync's root cause, already
one redacted line (`outcomes.py`), e.g. `workspace north: projects: GET /v1/projects returned
401 ...`; Dagster's run failure message only says which steps failed.
"""

from __future__ import annotations

import dagster as dg

from drone_ops_sync.pipelines.observe.alerts import alert_hook, send_alert
from drone_ops_sync.sources.drone_ops import ConfigError

from .outcomes import one_line

ALERT_SENSOR_NAME = "drone_ops_run_failed_alert"


def failure_cause(context: dg.RunFailureSensorContext) -> str:
    """The failed steps' own descriptions (our `Failure`s), else their errors' first lines,
    else the run's failure message."""
    causes: list[str] = []
    for event in context.get_step_failure_events():
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            causes.append(data.user_failure_data.description)
        elif data.error is not None:
            causes.append(data.error.message.strip().splitlines()[0])
    if not causes:
        causes.append(context.failure_event.message or "the run failed")
    return one_line("; ".join(dict.fromkeys(causes)))


def alert_text(context: dg.RunFailureSensorContext) -> str:
    """`Dagster run <id> of <job> (workspace <name>) failed: <cause>`."""
    run = context.dagster_run
    partition = run.tags.get("dagster/partition")
    where = f" (workspace {partition})" if partition else ""
    return one_line(
        f"Dagster run {run.run_id[:8]} of {run.job_name}{where} failed: {failure_cause(context)}"
    )


@dg.run_failure_sensor(
    name=ALERT_SENSOR_NAME,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends a failed run's cause through runtime.slack_incoming_hook (or logs it).",
)
def run_failed_alert(context: dg.RunFailureSensorContext) -> None:
    """Logs the failure line, and posts it once to the alert hook when one is configured; a
    hook that cannot be reached is one warning (`observe/transport.py`), never a sensor error."""
    text = alert_text(context)
    context.log.error(text)
    try:
        hook = alert_hook()
    except ConfigError as exc:
        context.log.warning(one_line(f"alert not sent: {exc}"))
        return
    if hook is not None:
        send_alert(hook, text)
