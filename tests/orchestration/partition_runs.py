"""Runs of the sync's partitions as Dagster runs them when deployed: each run in a process of its
own (the run launcher starts one per run, and the in-process executor runs its step there), all
writing to one Dagster instance on disk.

Why processes and not threads: Dagster's in-process execution is not thread-safe. Two
`dagster.materialize` calls in two threads of one process deadlocked here on the logging
module's lock (Dagster reconfigures logging with `logging.config.dictConfig` as each run
starts), so a test that ran partitions in threads would test something Dagster never does.

`python -m tests.orchestration.partition_runs <workspace> <warehouse JSON> <busy wait seconds>`
materializes one partition with `dagster.materialize` and prints what the run did as one JSON
line; `start_partition_run` and `finish_partition_run` are the parent's side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@dataclass
class PartitionRun:
    """What one partition's run did, as its process reported it."""

    workspace: str
    run_id: str
    success: bool
    retries: int
    failures: list[str]
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def interval(self) -> tuple[float, float]:
        """The sync's start and end (seconds since the epoch), from `_sync_runs`' metadata."""
        runs = self.tables["_sync_runs"]
        return runs["sync_started_at"], runs["sync_finished_at"]


def start_partition_run(
    workspace: str, warehouse: dict[str, Any], busy_wait_seconds: float = 0.5
) -> subprocess.Popen[str]:
    """Starts one partition's run; the environment (workspaces, keys, DAGSTER_HOME) is ours."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.orchestration.partition_runs",
            workspace,
            json.dumps(warehouse),
            str(busy_wait_seconds),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )


def finish_partition_run(process: subprocess.Popen[str], timeout: float = 180) -> PartitionRun:
    """Waits for the run's process and reads its report (its last stdout line)."""
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, f"the partition's process exited {process.returncode}"
    return PartitionRun(**json.loads(out.strip().splitlines()[-1]))


def run_partitions(
    workspaces: list[str],
    warehouse: dict[str, Any],
    busy_wait_seconds: float = 0.5,
    meanwhile: Callable[[], None] | None = None,
) -> list[PartitionRun]:
    """Runs of the given partitions, all started at once as a schedule tick starts them (a
    workspace named twice is run twice); `meanwhile` is called once they are all started, and
    the runs are awaited after it returns (or raises)."""
    processes = [start_partition_run(name, warehouse, busy_wait_seconds) for name in workspaces]
    try:
        if meanwhile is not None:
            meanwhile()
    finally:
        runs = [finish_partition_run(process) for process in processes]
    return runs


def _plain(value: Any) -> Any:
    """A metadata value as JSON can carry it."""
    inner = getattr(value, "value", value)
    return inner if isinstance(inner, str | int | float | bool) or inner is None else str(inner)


def _failure_line(event: Any) -> str:
    """A failed step's description (our `Failure`), else its error's message."""
    data = event.step_failure_data
    if data.user_failure_data is not None:
        return str(data.user_failure_data.description or "")
    return str(data.error.message if data.error is not None else "")


def main(argv: list[str]) -> int:
    import dagster as dg

    from drone_ops_sync.orchestration.raw_assets import (
        SYNC_ASSETS_NAME,
        build_sync_assets,
        workspace_partitions,
    )
    from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse

    workspace, warehouse, busy_wait = argv[0], json.loads(argv[1]), float(argv[2])
    sync = build_sync_assets(workspace_partitions())
    config = {"busy_retries": 240, "busy_wait_seconds": busy_wait}
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [sync],
            partition_key=workspace,
            instance=instance,
            resources={"warehouse": DroneSyncWarehouse(**warehouse)},
            run_config={"ops": {SYNC_ASSETS_NAME: {"config": config}}},
            raise_on_error=False,
        )
    tables = {
        event.asset_key.path[-1]: {key: _plain(value) for key, value in event.metadata.items()}
        for event in result.asset_materializations_for_node(SYNC_ASSETS_NAME)
    }
    failures = [_failure_line(event) for event in result.get_step_failure_events()]
    retries = sum(
        1
        for event in result.all_events
        if event.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY
    )
    report = PartitionRun(workspace, result.run_id, result.success, retries, failures, tables)
    print(json.dumps(report.__dict__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
