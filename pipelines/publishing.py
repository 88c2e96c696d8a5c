"""What follows a successful sync (`drone-sync run`) or stands alone (`drone-sync models`): the
dbt build of what changed since the last one (`build_plan.py`), then the BI snapshot and its
dashboard page. Only here is anything published, so a failed or interrupted run never
publishes half-updated data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from drone_ops_sync.sources.drone_ops import ConfigError
from drone_ops_sync.sources.drone_ops.internal import configured_names, redact, workspace_dataset

from .console.output import Output
from .exit_codes import EXIT_FAILED, EXIT_OK
from .publish.build_plan import plan_build
from .publish.build_record import (
    DBT_TARGET,
    dbt_folder,
    forget_build,
    project_fingerprint,
    remember_build,
    remember_snapshot,
    snapshot_current,
)
from .publish.dashboard import DashboardError, write_dashboard
from .publish.dbt_build import ModelsResult, dbt_target
from .publish.snapshot import SnapshotError, SnapshotResult, publish_snapshot
from .publish.snapshot_plan import SnapshotPlan, snapshot_plan
from .run.door import busy_message, ensure_warehouse_free, models_lock
from .run.lock import WarehouseBusy
from .run.signals import SignalStop
from .run.sync import SyncOutcome
from .run.target import Target


def build_models_step(
    target: Target,
    output: Output,
    stop: SignalStop,
    *,
    run_tests: bool,
    data_version: str | None,
    reuse_current: bool = False,
    outcome: SyncOutcome | None = None,
    snapshot: SnapshotPlan | None = None,
) -> int:
    """Builds (and tests) every model of the fleet, or with `reuse_current` only those
    downstream of what changed since the last build (`build_plan.py`), inside the models lock
    (on DuckDB the file's access lock, so no workspace loads meanwhile); then publishes the
    snapshot and ends the command with its exit code."""
    with models_lock(target):
        folder = dbt_folder(target.sync_dir())
        plan = plan_build(folder, data_version, target.dataset, full=not reuse_current)
        # the snapshot in place holds the recorded build's marts: only what this build
        # rebuilds is copied anew, with its freshness (_snapshot_info, _sync_runs)
        current = (
            snapshot is not None
            and plan.previous is not None
            and snapshot_current(plan.previous, snapshot.path)
        )
        if plan.scope == "none" and plan.previous is not None:
            reused = ModelsResult(
                ok=True, reused_from=plan.previous.built_at, scope="none", reason=plan.reason
            )
            output.models_summary(reused, target.dataset)
            rebuilt: Collection[str] | None = () if current else None
            return finish_success(target, snapshot, output, outcome, reused, rebuilt=rebuilt)
        prepare_models_build(target)
        then = "the loaded tables are complete, and the next run builds the models"
        with output.status("building dbt models", then):
            result = dbt_build(
                target, select=plan.select or None, run_tests=run_tests, unit_tests=plan.unit_tests
            )
            if stop.received is not None:
                # dbt turned the KeyboardInterrupt into a failed result: the signal ends the command
                raise KeyboardInterrupt
        result.scope, result.reason = plan.scope, plan.reason
        result.changed_tables = plan.changed_tables
        database = target.duckdb_file()
        if database is not None and result.error:
            busy = busy_message(database.resolve(), Exception(result.error))
            if busy is not None:
                raise WarehouseBusy(busy)
        output.models_summary(result, target.dataset)
        if not result.ok:
            return output.finish(EXIT_FAILED, "failed", outcome, result)
        if run_tests:
            remember_build(
                folder,
                data_version,
                target.dataset,
                full=plan.scope == "full",
                previous=plan.previous,
            )
        rebuilt = result.built if current and plan.scope == "changed" else None
        return finish_success(target, snapshot, output, outcome, result, rebuilt=rebuilt)


def prepare_models_build(target: Target, *, forget: bool = True) -> Path:
    """What every model build does first, inside the models lock: the warehouse free and
    reachable, the build record forgotten unless told not to `forget` (a partial build that
    passes keeps it; one that fails leaves none); returns the dbt folder."""
    ensure_warehouse_free(target)
    folder = dbt_folder(target.sync_dir())
    if forget:
        forget_build(folder)
    return folder


def dbt_build(
    target: Target,
    *,
    select: Sequence[str] | None,
    run_tests: bool,
    unit_tests: bool,
    manifest: Any | None = None,
) -> ModelsResult:
    """The one way a warehouse's models are built, by a run or the receiver's marts follower:
    in-process dbt on the warehouse's dbt folder, over every configured workspace; with
    `manifest` (`parse_models`), without parsing the project again."""
    from .publish.dbt_build import build_models

    return build_models(
        dbt_target(target),
        target.dataset,
        run_tests=run_tests,
        target_path=dbt_folder(target.sync_dir()) / DBT_TARGET,
        scratch_root=target.spill_root(),
        dbt_vars=fleet_vars(target),
        select=select,
        unit_tests=unit_tests,
        write_json=False,
        manifest=manifest,
    )


def parse_models(target: Target, kept: tuple[str, Any | None] | None) -> tuple[str, Any | None]:
    """The project parsed for `dbt_build` on `target`, with the key it stays valid for (the
    project's files, the vars, the warehouse): `kept` while its key is the same, else parsed
    anew (`parse_project`)."""
    from .publish.dbt_build import parse_project

    dbt_vars, warehouse = fleet_vars(target), dbt_target(target)
    inputs = [project_fingerprint(), dbt_vars, target.dataset, sorted(warehouse.env.items())]
    key = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()  # the env holds a password
    if kept is not None and kept[0] == key:
        return kept
    folder = dbt_folder(target.sync_dir()) / DBT_TARGET
    return key, parse_project(warehouse, target.dataset, folder, dbt_vars)


def fleet_vars(target: Target) -> dict[str, Any]:
    """The dbt var naming every configured workspace and the schema of its raw tables."""
    return {
        "workspaces": [
            {"name": name, "schema": workspace_dataset(target.dataset, name)}
            for name in configured_names()
        ]
    }


def command_snapshot_plan(target: Target, args: argparse.Namespace) -> SnapshotPlan | None:
    """The BI snapshot this command publishes (`--snapshot`, `--no-snapshot`, `--snapshot-raw`),
    checked before anything is written; only a DuckDB warehouse gets one (BI tools read a
    server while a sync writes)."""
    if target.destination != "duckdb":
        if args.snapshot is not None or args.snapshot_raw:
            flag = "--snapshot" if args.snapshot is not None else "--snapshot-raw"
            raise ConfigError(
                flag,
                "a BI snapshot is made of a DuckDB warehouse only; BI tools can read"
                f" {target.destination} while a sync writes",
            )
        return None
    return snapshot_plan(
        target.resolved_database(),
        target.dataset,
        path_flag=args.snapshot,
        off_flag=args.no_snapshot,
        include_raw=args.snapshot_raw,
    )


def publish_marts(
    target: Target, plan: SnapshotPlan, rebuilt: Collection[str] | None
) -> SnapshotResult:
    """The BI snapshot and its page, the one way a run, `models` and the marts follower
    publish: with `rebuilt`, a copy of the snapshot in place with those models' marts replaced
    (`publish_snapshot`). A marts-only snapshot is then noted in the build record, so the next
    publish may refresh it. Raises `SnapshotError` or `DashboardError`."""
    result = publish_snapshot(
        target.resolved_database().resolve(),
        target.dataset,
        plan.path,
        include_raw=plan.include_raw,
        include_runs=plan.include_runs,
        rebuilt=rebuilt,
    )
    # the page of the new snapshot, beside it: republished with it, or it fails with it
    result = replace(result, dashboard=write_dashboard(plan.path, target.dataset))
    if not plan.include_raw:
        remember_snapshot(dbt_folder(target.sync_dir()), plan.path)
    return result


def finish_success(
    target: Target,
    snapshot: SnapshotPlan | None,
    output: Output,
    outcome: SyncOutcome | None = None,
    models: ModelsResult | None = None,
    *,
    rebuilt: Collection[str] | None = None,
) -> int:
    """Ends a command that succeeded: publishes the BI snapshot (with `rebuilt` only those
    marts and its freshness), then the final summary; a snapshot that cannot be published fails
    the command and leaves the previous one in place."""
    if snapshot is not None:
        try:
            then = "the models are built, and the next run publishes the snapshot"
            with output.status("publishing the BI snapshot", then):
                result = publish_marts(target, snapshot, rebuilt)
        except (SnapshotError, DashboardError) as exc:
            error = redact(str(exc))
            output.snapshot_failed(snapshot.path, error)
            return output.finish(EXIT_FAILED, "failed", outcome, models, error=error)
        output.snapshot_summary(result)
    return output.finish(EXIT_OK, "success", outcome, models)
