"""What one workspace's sync did, in Dagster's terms: metadata per raw table, and the failure
that ends a partition, each a single redacted line.

Why the exit codes of `drone-sync` (`pipelines/exit_codes.py`) decide what Dagster does: they
already say whether trying again can help. A configuration error (2) never heals by itself, so
it fails with no retry. A busy workspace (75) is retried after a wait (`raw_assets.py`). A
failed sync (1: the API down, a key refused, a table failed) has spent its own retry budget on
the API already, so it fails with its root cause and the next scheduled run picks up the rest.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import dagster as dg

from drone_ops_sync.pipelines.console.summary import root_cause
from drone_ops_sync.pipelines.exit_codes import EXIT_CONFIG, EXIT_FAILED
from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.sources.drone_ops import TableResult
from drone_ops_sync.sources.drone_ops.internal import (
    EVENTS_TABLE,
    FAILED_STATUSES,
    redact,
    settings,
)

RUNS_TABLE = settings.RUNS_TABLE


def one_line(text: str) -> str:
    """`text` as one redacted line: a log line, an alert, the Dagster UI's failure summary."""
    return redact(" ".join(str(text).split()))


def loaded_tables(outcome: SyncOutcome) -> list[str]:
    """The raw tables this run changed in the warehouse: every table whose load committed (a
    quiet one too), and `_sync_runs` and `_webhook_events` once the run is recorded
    (`RECORD_RESOURCES`); a failed or refused table loaded nothing."""
    tables = [name for name, result in outcome.report.tables.items() if result.loaded]
    if outcome.finished_at is not None:
        tables.extend((RUNS_TABLE, EVENTS_TABLE))
    return tables


def table_metadata(
    outcome: SyncOutcome, table: str, workspace: str, dataset: str
) -> dict[str, Any]:
    """One raw table's materialization metadata: the run's identity and times, and what the
    run did to this table (the columns of the CLI's summary)."""
    report = outcome.report
    metadata: dict[str, Any] = {
        "workspace": workspace,
        "schema": dataset,
        "pipeline_name": outcome.pipeline_name or "",
        "sync_run_id": report.run_id,
        "sync_started_at": _timestamp(report.started_at),
    }
    if outcome.finished_at is not None:
        metadata["sync_finished_at"] = _timestamp(outcome.finished_at)
    if table == RUNS_TABLE:
        metadata["status"] = "success"
        metadata["rows_appended"] = len(report.tables)
        return metadata
    if table == EVENTS_TABLE:
        # its rows are the receiver's; the sync only makes sure the table exists
        metadata["status"] = "success"
        return metadata
    return {**metadata, **_result_metadata(report.table(table))}


def _result_metadata(result: TableResult) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "status": result.status,
        "rows_seen": result.rows_seen,
        "rows_new": result.new,
        "rows_changed": result.changed,
        "rows_retired": result.retired,
        "pages": result.pages,
        "requests": result.requests,
        "retries": result.retries,
        "seconds": round(result.seconds, 3),
    }
    if result.scope:
        metadata["scope"] = result.scope
    return metadata


def _timestamp(moment: datetime) -> dg.MetadataValue:
    """A UTC moment as Dagster's timestamp metadata (seconds since the epoch, a float)."""
    return dg.MetadataValue.timestamp(moment.timestamp())


def sync_failure(outcome: SyncOutcome, workspace: str) -> dg.Failure:
    """A sync that ran and failed: its root cause, as the CLI's summary gives it."""
    failed = [
        name for name, result in outcome.report.tables.items() if result.status in FAILED_STATUSES
    ]
    return partition_failure(
        workspace,
        root_cause(outcome) or "the run failed",
        EXIT_FAILED,
        {"sync_run_id": outcome.report.run_id, "failed_tables": ", ".join(failed)},
    )


def batch_failure(failures: list[dg.Failure]) -> dg.Failure:
    """The step of a run of several workspaces, several of which failed: one line naming
    each, the exit code `drone-sync run` gives a fleet (2 when every failure was a setting)."""
    codes = {failure.metadata["exit_code"].value for failure in failures}
    workspaces = [str(failure.metadata["workspace"].value) for failure in failures]
    return dg.Failure(
        description=one_line(" | ".join(str(failure.description) for failure in failures)),
        metadata={
            "workspace": ", ".join(workspaces),
            "exit_code": EXIT_CONFIG if codes == {EXIT_CONFIG} else EXIT_FAILED,
        },
        allow_retries=False,
    )


def partition_failure(
    workspace: str, cause: str, exit_code: int, metadata: dict[str, Any] | None = None
) -> dg.Failure:
    """Ends the partition with one line and no retry by Dagster; `exit_code` is what
    `drone-sync run --workspace <name>` would have exited with."""
    return dg.Failure(
        description=one_line(f"workspace {workspace}: {cause}"),
        metadata={"workspace": workspace, "exit_code": exit_code, **(metadata or {})},
        allow_retries=False,
    )
