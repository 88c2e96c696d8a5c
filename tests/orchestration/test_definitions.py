"""The code location as Dagster loads it: definitions that validate, one partition per
configured workspace, the dbt sources wired to the sync's assets, the schedule's run requests,
the condition the models follow, and the committed instance configuration. No API is called."""

from __future__ import annotations

import importlib
import json
import shutil
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from drone_ops_sync.orchestration.automation import BATCH_TAG, SYNC_JOB_NAME, SYNC_SCHEDULE_NAME
from drone_ops_sync.orchestration.definitions import build_definitions
from drone_ops_sync.orchestration.models import MODELS_ASSETS_NAME
from drone_ops_sync.orchestration.raw_assets import (
    RAW_TABLES,
    SYNC_ASSETS_NAME,
    raw_table_key,
)

REPO = Path(__file__).resolve().parents[2]
WORKSPACES = ("east", "north", "south")


@pytest.fixture
def defs(monkeypatch: pytest.MonkeyPatch, dagster_home: Path) -> dg.Definitions:
    """The definitions for three named workspaces (addresses never called here)."""
    monkeypatch.delenv("SOURCES__DRONE_OPS__BASE_URL", raising=False)
    monkeypatch.setenv(
        "SOURCES__DRONE_OPS__WORKSPACES",
        json.dumps({name: {"base_url": "http://127.0.0.1:9"} for name in WORKSPACES}),
    )
    return build_definitions()


def assets_by_name(defs: dg.Definitions) -> dict[str, dg.AssetsDefinition]:
    return {
        asset.node_def.name: asset
        for asset in defs.assets or []
        if isinstance(asset, dg.AssetsDefinition)
    }


def test_the_definitions_load_with_one_partition_per_workspace(defs: dg.Definitions) -> None:
    dg.Definitions.validate_loadable(defs)
    sync = assets_by_name(defs)[SYNC_ASSETS_NAME]
    assert sync.partitions_def is not None
    assert sync.partitions_def.get_partition_keys() == list(WORKSPACES)
    assert set(sync.keys) == {raw_table_key(table) for table in RAW_TABLES}
    job = defs.resolve_job_def(SYNC_JOB_NAME)
    assert job.partitions_def == sync.partitions_def


def test_a_run_executes_its_one_step_in_its_own_process(defs: dg.Definitions) -> None:
    """The run launcher's process runs the step: no second process loads the code location."""
    job = defs.resolve_job_def(SYNC_JOB_NAME)
    assert job.executor_def is dg.in_process_executor
    assert len(job.graph.node_defs) == 1, "one step a run: nothing for other processes to share"


def test_the_models_depend_on_the_sync_and_their_tests_are_checks(defs: dg.Definitions) -> None:
    """Every dbt source is one of the sync's assets (the translator's keys), so the asset graph
    runs the models after the partitions; dbt's data tests are asset checks."""
    models = assets_by_name(defs)[MODELS_ASSETS_NAME]
    sync = assets_by_name(defs)[SYNC_ASSETS_NAME]
    upstream = {key for deps in models.asset_deps.values() for key in deps} - set(models.keys)
    # the receiver's table among them: the sync creates it empty (docs/events.md)
    raw = set(sync.keys)
    assert upstream and upstream <= raw, upstream - raw
    assert {key.path[-1] for key in upstream} >= {"projects", "jobs", "webhook_deliveries"}
    assert len(models.check_keys) > 20
    labels = {models.automation_conditions_by_key[key].get_label() for key in models.keys}
    assert labels == {"after the workspace syncs"}


def test_the_schedule_requests_one_run_per_workspace(defs: dg.Definitions) -> None:
    schedule = defs.resolve_schedule_def(SYNC_SCHEDULE_NAME)
    assert schedule.cron_schedule == "*/30 * * * *" and schedule.job_name == SYNC_JOB_NAME
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    tick = datetime(2026, 11, 25, 12, 30, tzinfo=UTC)
    repository = defs.get_repository_def()
    with dg.build_schedule_context(
        scheduled_execution_time=tick, repository_def=repository
    ) as context:
        requests = schedule.evaluate_tick(context).run_requests or []
    assert sorted(request.partition_key or "" for request in requests) == list(WORKSPACES)
    assert len({request.run_key for request in requests}) == len(WORKSPACES)


def test_the_models_follow_once_a_workspace_loaded(defs: dg.Definitions) -> None:
    """A workspace's load requests the models that read it (and what builds on them), once;
    workspaces that never loaded do not hold them back (eager() would wait for them)."""
    models = assets_by_name(defs)[MODELS_ASSETS_NAME]
    with dg.DagsterInstance.get() as instance:
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert before.total_requested == 0
        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key=raw_table_key("projects"), partition="north")
        )
        after = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=before.cursor
        )
        requested = {key.to_user_string() for key in models.keys if after.get_num_requested(key)}
        assert "stg/stg_drone_ops__project_versions" in requested
        assert "marts/dim_projects" in requested
        assert "stg/stg_drone_ops__webhooks" not in requested
        assert after.total_requested == len(requested), "nothing but models is requested"
        again = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after.cursor)
        assert again.total_requested == 0, "requested once per update"


def test_the_code_location_is_the_one_pyproject_names() -> None:
    """`dagster dev` from the repository root loads `[tool.dagster] module_name`."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    module = importlib.import_module(settings["dagster"]["module_name"])
    assert module.__name__ == "drone_ops_sync.orchestration.definitions"
    assert callable(module.defs)


def test_the_committed_instance_keeps_telemetry_off_and_one_run_per_workspace(
    tmp_path: Path,
) -> None:
    shutil.copy(REPO / ".dagster" / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.telemetry_enabled is False
        queue = instance.get_concurrency_config().run_queue_config
    assert queue is not None
    limits = queue.tag_concurrency_limits
    for key in ("dagster/partition", BATCH_TAG):
        assert {"key": key, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".dagster/*" in ignored and "!.dagster/dagster.yaml" in ignored
