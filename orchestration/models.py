"""The dbt models as Dagster assets and their tests as asset checks (dagster-dbt), built over
every workspace of the warehouse, after the workspaces' syncs.

A build is `drone-sync models` in Dagster's hands: the same project, `--vars` (`fleet_vars`),
profile values (`dbt_target`) and lock (`models_lock`); dbt itself runs as dagster-dbt runs
it, a `dbt build` subprocess whose events become materializations and check results.

(No `from __future__ import annotations` here: Dagster reads the parameter annotations of the
asset function to find its resources.)
"""

import json
import sys
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets
from packaging import version

from drone_ops_sync.pipelines.publish.dbt_build import (
    PROJECT_DIR,
    dbt_environment,
    dbt_target,
    profile_env,
)
from drone_ops_sync.pipelines.publishing import fleet_vars, prepare_models_build
from drone_ops_sync.pipelines.run.destination import check_target
from drone_ops_sync.pipelines.run.door import models_lock
from drone_ops_sync.pipelines.run.lock import WarehouseBusy
from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError

from .automation import models_follow_syncs
from .outcomes import one_line
from .raw_assets import RAW_SOURCE, raw_table_key
from .warehouse import DroneSyncWarehouse

MODELS_ASSETS_NAME = "drone_ops_models"
BUILD_TARGET = "dagster-target"
"""dbt's target folder for Dagster's builds, in the warehouse's dbt folder beside the CLI's
`target`: kept between builds for dbt's partial parse, never shared with the CLI's."""
BUSY_RETRIES = 3
BUSY_WAIT_SECONDS = 120.0
"""A build that found the warehouse busy for the whole 30-minute wait tries again this often."""


class DroneOpsTranslator(DagsterDbtTranslator):
    """dagster-dbt's defaults, except: the `drone_ops` source's tables are the sync's assets
    (`raw_table_key`), and every model follows the syncs (`automation.models_follow_syncs`)."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if (
            dbt_resource_props["resource_type"] == "source"
            and dbt_resource_props["source_name"] == RAW_SOURCE
        ):
            return raw_table_key(dbt_resource_props["name"])
        return super().get_asset_key(dbt_resource_props)

    def get_automation_condition(
        self, dbt_resource_props: Mapping[str, Any]
    ) -> dg.AutomationCondition | None:
        return models_follow_syncs()


class LocalDbtCli(DbtCliResource):
    """dagster-dbt's runner of this interpreter's `dbt`, told its version from the installed
    dbt-core: `dbt --version`, which dagster-dbt runs otherwise, asks pypi.org for releases
    (docs/fleet.md#dagster)."""

    @cached_property
    def _cli_version(self) -> version.Version:
        from dbt.version import __version__ as installed

        return version.parse(installed)


def dbt_resource() -> DbtCliResource:
    """The `dbt` resource: this interpreter's dbt when it has one (a virtual environment's
    `bin/` is often not on the PATH of whoever starts Dagster), else `dbt` from the PATH."""
    beside = Path(sys.executable).with_name("dbt")
    if beside.is_file():
        return LocalDbtCli(
            project_dir=str(PROJECT_DIR), profiles_dir=str(PROJECT_DIR), dbt_executable=str(beside)
        )
    return DbtCliResource(project_dir=str(PROJECT_DIR), profiles_dir=str(PROJECT_DIR))


def build_models_assets(project: DbtProject) -> dg.AssetsDefinition:
    """Every model of the project as an asset, its data tests as asset checks."""

    @dbt_assets(
        manifest=project.manifest_path,
        project=project,
        name=MODELS_ASSETS_NAME,
        dagster_dbt_translator=DroneOpsTranslator(),
    )
    def drone_ops_models(
        context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: DroneSyncWarehouse
    ) -> Iterator[Any]:
        yield from build_models(context, dbt, warehouse)

    return drone_ops_models


def build_models(
    context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: DroneSyncWarehouse
) -> Iterator[Any]:
    """`dbt build` of the selected models over every workspace, in the models lock."""
    models = warehouse.base_target().models_target()
    try:
        check_target(models)
        profile = dbt_target(models)
        args = [
            "build",
            "--target",
            profile.name,
            "--vars",
            json.dumps(fleet_vars(models)),
            "--no-version-check",
            # the fleet's production build: unit tests check the SQL on fixed inputs, which
            # `drone-sync models` and our CI run (docs/models.md)
            "--exclude-resource-type",
            "unit_test",
        ]
        with models_lock(models):
            folder = prepare_models_build(models)
            # dbt's process copies the environment when it starts; the values are gone after
            with dbt_environment(profile_env(profile, models.dataset)):
                invocation = dbt.cli(args, context=context, target_path=folder / BUILD_TARGET)
            yield from invocation.stream()
    except ConfigError as exc:
        raise dg.Failure(
            description=one_line(f"models: configuration error: {exc}"), allow_retries=False
        ) from None
    except WarehouseBusy as exc:
        context.log.warning(one_line(f"models: the warehouse is busy, retrying later: {exc}"))
        raise dg.RetryRequested(
            max_retries=BUSY_RETRIES, seconds_to_wait=BUSY_WAIT_SECONDS
        ) from exc
    except DroneOpsError as exc:
        # e.g. the destination unreachable: said in one line; the next sync's build retries
        raise dg.Failure(description=one_line(f"models: {exc}"), allow_retries=False) from None
