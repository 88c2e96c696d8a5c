"""The first automatic model build on a fresh warehouse, in-process: one workspace's partition
syncs the simulator over HTTP into a new DuckDB file, Dagster's automation conditions pick the
models to build, and that build succeeds, its data tests run and dbt's unit tests left out.
The receiver's `_webhook_events` is created by the sync, so its staging view must be among
what the sync's materializations request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from drone_ops_sync.orchestration.definitions import build_definitions
from drone_ops_sync.orchestration.models import BUILD_TARGET, MODELS_ASSETS_NAME
from drone_ops_sync.orchestration.raw_assets import SYNC_ASSETS_NAME
from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse
from drone_ops_sync.pipelines.publish.build_record import dbt_folder
from testkit.simulator_process import SimulatorHandle, running_simulator

from .conftest import configure_fleet

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def one_workspace() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=31, scale="tiny", admin=True) as handle:
        yield handle


def test_the_first_automatic_build_on_a_fresh_warehouse_succeeds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dagster_home: Path,
    one_workspace: SimulatorHandle,
) -> None:
    configure_fleet(monkeypatch, {"north": one_workspace}, {"north": one_workspace.read_key})
    warehouse = DroneSyncWarehouse(database=str(tmp_path / "fresh.duckdb"))
    defs = build_definitions(warehouse, executor=dg.in_process_executor)
    assets = {
        asset.node_def.name: asset
        for asset in defs.assets or []
        if isinstance(asset, dg.AssetsDefinition)
    }
    sync, models = assets[SYNC_ASSETS_NAME], assets[MODELS_ASSETS_NAME]
    resources = {"warehouse": warehouse, "dbt": defs.resources["dbt"]}  # type: ignore[index]
    with dg.DagsterInstance.get() as instance:
        start = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        synced = dg.materialize(
            [sync], partition_key="north", instance=instance, resources=resources
        )
        assert synced.success
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=start.cursor)
        requested = [key for key in models.keys if tick.get_num_requested(key)]
        names = {key.to_user_string() for key in requested}
        assert "marts/fct_webhook_event_gaps" in names, names
        built = dg.materialize(
            [sync, models],
            selection=dg.AssetSelection.assets(*requested),
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
    failures = [event.step_failure_data for event in built.get_step_failure_events()]
    assert built.success, failures
    materialized = {event.asset_key for event in built.get_asset_materialization_events()}
    assert materialized == set(requested)
    assert "stg/stg_drone_ops__webhook_events" in names, "the sync created _webhook_events"
    # the production build runs the data tests and leaves dbt's unit tests to development and
    # CI (docs/models.md): dbt's own record of what it ran says which
    folder = dbt_folder(warehouse.base_target().models_target().sync_dir()) / BUILD_TARGET
    results = json.loads((folder / "run_results.json").read_text(encoding="utf-8"))["results"]
    kinds = {result["unique_id"].split(".")[0] for result in results}
    assert "test" in kinds and "unit_test" not in kinds, kinds
