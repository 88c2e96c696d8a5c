"""What a partition does when it cannot sync, by the meaning of `drone-sync`'s exit codes: a
configuration error fails at once with its one line and is never retried; a busy workspace is
retried after a wait; and the run-failure sensor tells the line through the alert hook (a real
receiver on 127.0.0.1). No API is needed: both errors come before the sync calls one."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from drone_ops_sync.orchestration.alerts import run_failed_alert
from drone_ops_sync.orchestration.raw_assets import (
    SYNC_ASSETS_NAME,
    build_sync_assets,
    workspace_partitions,
)
from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse
from drone_ops_sync.pipelines.run.lock import warehouse_lock

from ..pipelines.receiver import running_receiver


def configure(monkeypatch: pytest.MonkeyPatch, workspaces: dict[str, str]) -> None:
    """Named workspaces by base URL, each with a key; no default workspace."""
    monkeypatch.delenv("SOURCES__DRONE_OPS__BASE_URL", raising=False)
    monkeypatch.setenv(
        "SOURCES__DRONE_OPS__WORKSPACES",
        json.dumps({name: {"base_url": url} for name, url in workspaces.items()}),
    )
    for name in workspaces:
        monkeypatch.setenv(f"SOURCES__DRONE_OPS__WORKSPACES__{name.upper()}__API_KEY", "key")


def materialize(
    workspace: str, warehouse: DroneSyncWarehouse, **config: float
) -> dg.ExecuteInProcessResult:
    with dg.DagsterInstance.get() as instance:
        return dg.materialize(
            [build_sync_assets(workspace_partitions())],
            partition_key=workspace,
            instance=instance,
            resources={"warehouse": warehouse},
            run_config={"ops": {SYNC_ASSETS_NAME: {"config": config}}},
            raise_on_error=False,
        )


def retries(result: dg.ExecuteInProcessResult) -> int:
    return sum(
        1 for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY
    )


def failure_description(result: dg.ExecuteInProcessResult) -> str:
    [event] = result.get_step_failure_events()
    data = event.step_failure_data
    assert data.user_failure_data is not None, data.error
    return data.user_failure_data.description or ""


@pytest.fixture
def warehouse(tmp_path: Path) -> DroneSyncWarehouse:
    return DroneSyncWarehouse(database=str(tmp_path / "fleet.duckdb"))


def test_a_configuration_error_fails_at_once_and_is_not_retried(
    monkeypatch: pytest.MonkeyPatch, dagster_home: Path, warehouse: DroneSyncWarehouse
) -> None:
    configure(monkeypatch, {"broken": "ftp://drone-ops.example.com", "fine": "http://127.0.0.1:9"})
    result = materialize("broken", warehouse)
    assert not result.success
    assert retries(result) == 0
    line = failure_description(result)
    assert line.startswith("workspace broken: configuration error: ")
    assert "sources.drone_ops.workspaces.broken.base_url" in line and "\n" not in line
    [event] = result.get_step_failure_events()
    assert event.step_failure_data.user_failure_data is not None
    assert event.step_failure_data.user_failure_data.metadata["exit_code"].value == 2
    assert not Path(warehouse.database or "").exists(), "nothing was created"


def test_a_busy_workspace_is_retried_after_a_wait(
    monkeypatch: pytest.MonkeyPatch, dagster_home: Path, warehouse: DroneSyncWarehouse
) -> None:
    """Another run holds the workspace's lock for the whole time: the partition asks Dagster to
    retry, as often as configured, then fails; the sync never starts meanwhile."""
    configure(monkeypatch, {"north": "http://127.0.0.1:9"})
    with warehouse_lock(warehouse.base_target().for_workspace("north").lock_path()):
        result = materialize("north", warehouse, busy_retries=2, busy_wait_seconds=0.05)
    assert not result.success
    assert retries(result) == 2
    assert result.asset_materializations_for_node(SYNC_ASSETS_NAME) == []


def test_the_failure_sensor_sends_the_line_through_the_alert_hook(
    monkeypatch: pytest.MonkeyPatch, dagster_home: Path, warehouse: DroneSyncWarehouse
) -> None:
    configure(monkeypatch, {"broken": "ftp://drone-ops.example.com"})
    result = materialize("broken", warehouse)
    with running_receiver() as receiver, dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
        failure = result.get_run_failure_event()
        context = dg.build_run_status_sensor_context(
            sensor_name="drone_ops_run_failed_alert",
            dagster_event=failure,
            dagster_instance=instance,
            dagster_run=run,
        ).for_run_failure()

        monkeypatch.delenv("RUNTIME__SLACK_INCOMING_HOOK", raising=False)
        run_failed_alert(context)
        assert receiver.received() == [], "no hook configured: logged only"

        monkeypatch.setenv("RUNTIME__SLACK_INCOMING_HOOK", f"{receiver.url}/hooks/T0/B0/secret")
        run_failed_alert(context)
        [alert] = receiver.received()
    text = alert.body["text"]
    assert text.startswith(f"Dagster run {result.run_id[:8]} of ")
    assert "(workspace broken) failed: workspace broken: configuration error: " in text
    assert "\n" not in text
