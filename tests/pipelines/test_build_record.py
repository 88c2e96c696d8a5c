"""The record that lets a run keep current marts: every condition that must hold, each one
broken in turn."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from drone_ops_sync.pipelines.publish.build_record import (
    RECORD_NAME,
    current_build,
    forget_build,
    project_fingerprint,
    read_record,
    remember_build,
    remember_snapshot,
    snapshot_current,
)
from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR


def test_a_remembered_build_is_current_for_the_same_data_project_dataset_and_day(
    tmp_path: Path,
) -> None:
    remember_build(tmp_path, "v1", "drone_ops")
    record = current_build(tmp_path, "v1", "drone_ops")
    assert record is not None and record.data_version == "v1"
    assert current_build(tmp_path, "v2", "drone_ops") is None, "the data changed"
    assert current_build(tmp_path, "v1", "other") is None, "another dataset's marts"
    assert current_build(tmp_path, None, "drone_ops") is None, "the data version is unknown"
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert current_build(tmp_path, "v1", "drone_ops", now=tomorrow) is None, "a new UTC day"


def test_an_edited_project_or_a_damaged_record_means_a_build(tmp_path: Path) -> None:
    remember_build(tmp_path, "v1", "drone_ops")
    path = tmp_path / RECORD_NAME
    stale = json.loads(path.read_text()) | {"project": "another project"}
    path.write_text(json.dumps(stale))
    assert current_build(tmp_path, "v1", "drone_ops") is None
    path.write_text("{not json")
    assert read_record(tmp_path) is None
    assert current_build(tmp_path, "v1", "drone_ops") is None
    path.write_text(json.dumps({"unexpected": 1}))
    assert read_record(tmp_path) is None


def test_a_build_forgets_the_record_before_it_starts(tmp_path: Path) -> None:
    remember_build(tmp_path, "v1", "drone_ops")
    forget_build(tmp_path)
    assert read_record(tmp_path) is None
    forget_build(tmp_path)  # nothing to forget is fine
    remember_build(tmp_path, None, "drone_ops")
    assert read_record(tmp_path) is None, "no data version, no record"


def test_the_snapshot_is_current_only_where_it_was_published(tmp_path: Path) -> None:
    remember_build(tmp_path, "v1", "drone_ops")
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
