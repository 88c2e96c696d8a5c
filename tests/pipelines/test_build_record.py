"""The record of the last build and the plan made from it: nothing, the models downstream of
the tables that changed, or everything; every condition of each, broken in turn."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from drone_ops_sync.pipelines.publish.build_plan import changed_tables, plan_build
from drone_ops_sync.pipelines.publish.build_record import (
    DBT_TARGET,
    RECORD_NAME,
    forget_build,
    project_fingerprint,
    read_record,
    remember_build,
    remember_snapshot,
    snapshot_current,
)
from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def versions(**tables: str) -> str:
    """A data version as `warehouse.data_version` writes it: compact JSON per table."""
    every = {"projects": "p1", "jobs": "j1", "webhooks": "w1", "webhook_deliveries": "d1"}
    return json.dumps(every | tables, sort_keys=True, separators=(",", ":"))


def test_a_remembered_build_is_current_for_the_same_data_project_dataset_and_day(
    tmp_path: Path,
) -> None:
    remember_build(tmp_path, versions(), "drone_ops", full=True, now=NOW)
    plan = plan_build(tmp_path, versions(), "drone_ops", now=NOW)
    assert plan.scope == "none" and plan.previous is not None and not plan.select
    other = plan_build(tmp_path, versions(), "other", now=NOW)
    assert other.scope == "full", "another dataset's marts"
    unknown = plan_build(tmp_path, None, "drone_ops", now=NOW)
    assert (unknown.scope, unknown.unit_tests) == ("full", False), "the data version is unknown"


def test_only_what_is_downstream_of_the_changed_tables_is_built(tmp_path: Path) -> None:
    remember_build(tmp_path, versions(), "drone_ops", full=True, now=NOW)
    plan = plan_build(tmp_path, versions(jobs="j2", projects="p2"), "drone_ops", now=NOW)
    assert plan.scope == "changed" and plan.changed_tables == ("jobs", "projects")
    assert plan.select == ("source:drone_ops.jobs+", "source:drone_ops.projects+")
    assert not plan.unit_tests, "the SQL did not change: its unit tests would say the same"
    # a table that appears (or disappears) counts as changed
    added = plan_build(tmp_path, versions(_webhook_events="e1"), "drone_ops", now=NOW)
    assert added.changed_tables == ("_webhook_events",)


def test_a_fleet_rebuilds_what_any_workspace_changed(tmp_path: Path) -> None:
    def fleet(**per_workspace: str) -> str:
        return ";".join(f"{name}={version}" for name, version in per_workspace.items())

    both = fleet(north=versions(), south=versions())
    remember_build(tmp_path, both, "drone_ops", full=True, now=NOW)
    assert plan_build(tmp_path, both, "drone_ops", now=NOW).scope == "none"
    south_jobs = fleet(north=versions(), south=versions(jobs="j2"))
    assert plan_build(tmp_path, south_jobs, "drone_ops", now=NOW).changed_tables == ("jobs",)
    # a workspace added to the configuration: every one of its tables is new
    added = fleet(north=versions(), south=versions(), east=versions())
    assert set(plan_build(tmp_path, added, "drone_ops", now=NOW).changed_tables) == set(
        json.loads(versions())
    )
    # a data version of another form (an older record) cannot be compared: a full build
    assert changed_tables("0123abcd", versions()) is None
    assert changed_tables("north=0123abcd", versions()) is None


def test_a_full_build_runs_first_when_asked_after_a_project_change_and_daily(
    tmp_path: Path,
) -> None:
    first = plan_build(tmp_path, versions(), "drone_ops")
    assert (first.scope, first.unit_tests) == ("full", False), "a first build: no unit tests"
    (tmp_path / DBT_TARGET).mkdir()
    retried = plan_build(tmp_path, versions(), "drone_ops")
    assert (retried.scope, retried.unit_tests) == ("full", True), "a build was tried, not passed"
    now = NOW
    remember_build(tmp_path, versions(), "drone_ops", full=True, now=now)
    asked = plan_build(tmp_path, versions(), "drone_ops", full=True, now=now)
    assert (asked.scope, asked.unit_tests) == ("full", True)

    # a partial build later that day keeps the day's full build as the last one
    later = now + timedelta(hours=14)
    changed = plan_build(tmp_path, versions(jobs="j2"), "drone_ops", now=later)
    assert changed.scope == "changed"
    remember_build(
        tmp_path, versions(jobs="j2"), "drone_ops", full=False, previous=changed.previous, now=later
    )
    record = read_record(tmp_path)
    assert record is not None and record.full_built_at == now.isoformat(timespec="seconds")
    # the next UTC day: everything, whether or not anything changed (the status histories
    # measure "until now"), without the unit tests (the SQL is the same)
    next_day = now + timedelta(hours=15, minutes=1)
    daily = plan_build(tmp_path, versions(jobs="j2"), "drone_ops", now=next_day)
    assert (daily.scope, daily.unit_tests, daily.reason) == (
        "full",
        False,
        "the first build of the day",
    )
    assert plan_build(tmp_path, versions(jobs="j3"), "drone_ops", now=next_day).scope == "full"

    path = tmp_path / RECORD_NAME
    path.write_text(json.dumps(json.loads(path.read_text()) | {"project": "another project"}))
    edited = plan_build(tmp_path, versions(jobs="j2"), "drone_ops", now=later)
    assert (edited.scope, edited.unit_tests) == ("full", True), "an edited project or engine"


def test_a_damaged_or_older_record_means_a_full_build(tmp_path: Path) -> None:
    remember_build(tmp_path, versions(), "drone_ops", full=True)
    path = tmp_path / RECORD_NAME
    path.write_text("{not json")
    assert read_record(tmp_path) is None
    assert plan_build(tmp_path, versions(), "drone_ops").scope == "full"
    path.write_text(json.dumps({"unexpected": 1}))
    assert read_record(tmp_path) is None
    # a record without the time of the last full build: the next build is a full one
    remember_build(tmp_path, versions(), "drone_ops", full=False)
    assert plan_build(tmp_path, versions(), "drone_ops").scope == "full"


def test_a_build_forgets_the_record_before_it_starts(tmp_path: Path) -> None:
    remember_build(tmp_path, "v1", "drone_ops", full=True)
    forget_build(tmp_path)
    assert read_record(tmp_path) is None
    forget_build(tmp_path)  # nothing to forget is fine
    remember_build(tmp_path, None, "drone_ops", full=True)
    assert read_record(tmp_path) is None, "no data version, no record"


def test_the_snapshot_is_current_only_where_it_was_published(tmp_path: Path) -> None:
    remember_build(tmp_path, "v1", "drone_ops", full=True)
    snapshot = tmp_path / "w_bi.duckdb"
    snapshot.write_bytes(b"published")
    remember_snapshot(tmp_path, snapshot)
    record = read_record(tmp_path)
    assert record is not None and snapshot_current(record, snapshot)
    assert not snapshot_current(record, tmp_path / "elsewhere_bi.duckdb")
    snapshot.unlink()
    assert not snapshot_current(record, snapshot), "a removed snapshot is published again"


def test_the_project_fingerprint_follows_the_dbt_files(tmp_path: Path) -> None:
    copy = tmp_path / "models"
    shutil.copytree(PROJECT_DIR, copy, ignore=shutil.ignore_patterns("target", "logs", ".user.yml"))
    assert project_fingerprint(copy) == project_fingerprint(PROJECT_DIR)
    model = next((copy / "marts" / "operations").glob("*.sql"))
    model.write_text(model.read_text() + "\n-- edited\n")
    assert project_fingerprint(copy) != project_fingerprint(PROJECT_DIR)
