"""A run's lifecycle has one owner, the run itself: it opens once, through the pipeline that
loads it, and ends when its last table has finished, whatever drives it; how it ends depends
only on whether it is loaded in one extract or group by group."""

from __future__ import annotations

from pathlib import Path

import dlt
import pytest

from drone_ops_sync.sources.drone_ops import DroneOpsError, read_source_config
from drone_ops_sync.sources.drone_ops.internal import SPILL_PREFIX, RunOptions, Seams, SyncRun
from tests.sources.fake_api import API_KEY, BASE_URL, FakeApi

TABLES = ("projects", "job_types")


def _run(tmp_path: Path, *, loads_by_group: bool) -> tuple[SyncRun, dlt.Pipeline]:
    config = read_source_config({"base_url": BASE_URL, "api_key": API_KEY})
    run = SyncRun(
        config,
        RunOptions(tables=TABLES),
        spill_root=tmp_path / "spill",
        seams=Seams(transport=FakeApi.small().transport()),
        loads_by_group=loads_by_group,
    )
    pipeline = dlt.pipeline(
        "lifecycle",
        destination=dlt.destinations.duckdb(str(tmp_path / "w.duckdb")),
        dataset_name="drone_ops",
        pipelines_dir=str(tmp_path / "pipelines"),
    )
    return run, pipeline


def _spill_folders(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "spill").glob(f"{SPILL_PREFIX}*"))


def test_a_run_driven_group_by_group_ends_with_its_last_table(tmp_path: Path) -> None:
    run, pipeline = _run(tmp_path, loads_by_group=True)
    run.open(pipeline)
    walk = run.walk
    assert walk is not None and _spill_folders(tmp_path)
    run.open(pipeline)
    assert run.walk is walk, "a run opens once"

    assert run.walk.wait("projects") >= 0
    run.cancel.set()
    run.skip(["projects"])
    assert run.walk is walk, "a table is still pending: the run goes on"
    run.skip(["job_types"])

    assert run.walk is None and not _spill_folders(tmp_path), "ended with its last table"
    assert {r.status for r in run.report.tables.values()} == {"interrupted"}
    assert run.record is None, "the driver records a run loaded group by group"
    run.open(pipeline)
    assert run.walk is None, "an ended run is not opened again"


def test_a_run_loaded_in_one_extract_records_itself_and_raises_at_its_end(
    tmp_path: Path,
) -> None:
    run, pipeline = _run(tmp_path, loads_by_group=False)
    run.open(pipeline)
    run.cancel.set()
    run.skip(["projects"])
    with pytest.raises(DroneOpsError, match="job_types: the run was interrupted"):
        run.skip(["job_types"])
    assert run.walk is None and not _spill_folders(tmp_path)
    assert run.record is not None and run.record.marks == {}


def test_the_drivers_with_ends_a_run_whose_tables_did_not_all_finish(tmp_path: Path) -> None:
    run, pipeline = _run(tmp_path, loads_by_group=True)
    with run:
        run.open(pipeline)
        assert _spill_folders(tmp_path)
    assert run.walk is None and not _spill_folders(tmp_path)
