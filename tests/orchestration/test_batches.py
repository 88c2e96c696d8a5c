"""Workspaces in batches: the schedule cuts a large fleet into runs of at most
`WORKSPACES_PER_RUN` workspaces (a small one still into a run each, up to `PARALLEL_RUNS`), and
one run of a partition range syncs its workspaces in turn, materializing each workspace's
tables as its sync ends, so one workspace's failure fails the step with its line alone and
the others' tables are materialized all the same."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from drone_ops_sync.orchestration.automation import (
    BATCH_TAG,
    PARALLEL_RUNS,
    SYNC_SCHEDULE_NAME,
    WORKSPACES_PER_RUN,
)
from drone_ops_sync.orchestration.definitions import build_definitions
from drone_ops_sync.orchestration.raw_assets import (
    RAW_TABLES,
    SYNC_ASSETS_NAME,
    build_sync_assets,
    workspace_partitions,
)
from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse
from testkit.simulator_process import SimulatorHandle

from .conftest import configure_fleet


def _requests(count: int, monkeypatch: pytest.MonkeyPatch) -> list[dg.RunRequest]:
    monkeypatch.delenv("SOURCES__DRONE_OPS__BASE_URL", raising=False)
    workspaces = {f"w{n:03d}": {"base_url": "http://127.0.0.1:9"} for n in range(count)}
    monkeypatch.setenv("SOURCES__DRONE_OPS__WORKSPACES", json.dumps(workspaces))
    defs = build_definitions()
    schedule = defs.resolve_schedule_def(SYNC_SCHEDULE_NAME)
    tick = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    with dg.build_schedule_context(
        scheduled_execution_time=tick, repository_def=defs.get_repository_def()
    ) as context:
        return list(schedule.evaluate_tick(context).run_requests or [])


@pytest.mark.parametrize("count", [3, 60, 500])
def test_the_schedule_cuts_the_fleet_into_batches(
    count: int, monkeypatch: pytest.MonkeyPatch, dagster_home: Path
) -> None:
    requests = _requests(count, monkeypatch)
    keys = sorted(f"w{n:03d}" for n in range(count))
    covered: list[str] = []
    for request in requests:
        if request.partition_key is not None:
            covered.append(request.partition_key)
            continue
        start = request.tags[ASSET_PARTITION_RANGE_START_TAG]
        end = request.tags[ASSET_PARTITION_RANGE_END_TAG]
        batch = keys[keys.index(start) : keys.index(end) + 1]
        assert 1 < len(batch) <= WORKSPACES_PER_RUN
        covered.extend(batch)
    assert sorted(covered) == keys, "every workspace in exactly one run"
    batches = [request.tags[BATCH_TAG] for request in requests]
    assert len(set(batches)) == len(requests), "the instance's limit of one run per batch"
    assert len(requests) == max(min(count, PARALLEL_RUNS), -(-count // WORKSPACES_PER_RUN))
    assert len({request.run_key for request in requests}) == len(requests)


def test_one_run_syncs_a_batch_and_a_failure_stays_its_workspaces(
    monkeypatch: pytest.MonkeyPatch,
    dagster_home: Path,
    fleet: dict[str, SimulatorHandle],
    tmp_path: Path,
) -> None:
    keys = {name: handle.read_key for name, handle in fleet.items()}
    keys["south"] = "a-refused-key"
    configure_fleet(monkeypatch, fleet, keys)
    names = workspace_partitions().get_partition_keys()
    assert names[1:] == ["north", "south"], names  # the batch: one that syncs, one refused
    warehouse = DroneSyncWarehouse(database=str(tmp_path / "fleet.duckdb"))
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [build_sync_assets(workspace_partitions())],
            instance=instance,
            resources={"warehouse": warehouse},
            tags={
                ASSET_PARTITION_RANGE_START_TAG: "north",
                ASSET_PARTITION_RANGE_END_TAG: "south",
            },
            run_config={"ops": {SYNC_ASSETS_NAME: {"config": {"busy_retries": 0}}}},
            raise_on_error=False,
        )
    assert not result.success
    materialized: dict[str, set[str]] = {}
    for event in result.asset_materializations_for_node(SYNC_ASSETS_NAME):
        assert event.partition is not None
        materialized.setdefault(event.partition, set()).add(event.asset_key.path[-1])
    assert materialized["north"] == set(RAW_TABLES)
    assert set(materialized) <= {"north", "south"} and "projects" not in materialized.get(
        "south", set()
    )
    [failure] = result.get_step_failure_events()
    data = failure.step_failure_data.user_failure_data
    assert data is not None
    line = data.description or ""
    assert line.startswith("workspace south: ") and "401" in line and "\n" not in line
    assert "north" not in line
