"""The marts follower does nothing before a passing model build made the marts, or when the
build record is of another dbt project: the scheduled run's full build comes first
(docs/events.md, "Marts that follow"). The end-to-end path is in test_events_marts_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

from drone_ops_sync.pipelines.listen.marts import MartsFollower
from drone_ops_sync.pipelines.publish.build_record import (
    RECORD_NAME,
    dbt_folder,
    remember_build,
)
from drone_ops_sync.pipelines.run.target import Target


def _follower(tmp_path: Path) -> MartsFollower:
    target = Target(destination="duckdb", database=tmp_path / "w.duckdb", dataset="drone_ops")
    return MartsFollower(target, None, 1.0)


def test_no_build_recorded_is_not_followed(tmp_path: Path) -> None:
    follower = _follower(tmp_path)
    assert follower.follow() is False
    assert follower.stats.skipped is not None and "no passing model build" in follower.stats.skipped
    assert follower.stats.builds == 0 and follower.stats.last_started_at is None


def test_a_record_of_another_project_is_not_followed(tmp_path: Path) -> None:
    follower = _follower(tmp_path)
    folder = dbt_folder(follower.target.sync_dir())
    remember_build(folder, '{"projects": "1"}', "drone_ops", full=True)
    path = folder / RECORD_NAME
    path.write_text(json.dumps({**json.loads(path.read_text()), "project": "edited"}))
    before = path.read_text()
    assert follower.follow() is False
    assert follower.stats.skipped is not None and "dbt project" in follower.stats.skipped
    assert path.read_text() == before
