"""`run_state.py` against real DuckDB files: the run-state tables as the source's resources
write them through dlt, and every question asked of them, through the pipeline's own client
and through a read-only connection alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dlt
import duckdb
import pytest

from drone_ops_sync.sources.drone_ops import SyncReport
from drone_ops_sync.sources.drone_ops.internal import RunRecord, RunStateReader, connection_reader
from drone_ops_sync.sources.drone_ops.run_state import pipeline_reader, record_resources

DATASET = "drone_ops"
START = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def report(run_id: str, statuses: dict[str, str]) -> SyncReport:
    made = SyncReport(run_id, START)
    for table, status in statuses.items():
        result = made.table(table)
        result.status = status  # type: ignore[assignment]
        result.error = f"{table}: broke" if status == "failed" else None
    return made


def record(pipeline: dlt.Pipeline, made: RunRecord) -> None:
    pipeline.run(record_resources(lambda: made))


@pytest.fixture
def warehouse(tmp_path: Path) -> tuple[dlt.Pipeline, Path]:
    database = tmp_path / "runs.duckdb"
    pipeline = dlt.pipeline(
        pipeline_name="run_state_test",
        destination=dlt.destinations.duckdb(str(database)),
        dataset_name=DATASET,
        pipelines_dir=str(tmp_path / "dlt"),
    )
    return pipeline, database


def read_only(database: Path) -> tuple[duckdb.DuckDBPyConnection, RunStateReader]:
    connection = duckdb.connect(str(database), read_only=True)
    return connection, connection_reader(connection, DATASET)


def test_an_empty_warehouse_answers_as_never_synced(tmp_path: Path) -> None:
    database = tmp_path / "empty.duckdb"
    duckdb.connect(str(database)).close()
    connection, state = read_only(database)
    with connection:
        assert not state.has_runs()
        assert state.job_syncs() == 0
        assert state.delivery_marks() is None, "no marks table: never recorded"
        assert state.last_successes() == {} and state.latest_attempts() == {}
        assert state.newest_run() is None and state.newest_good_run() is None


def test_what_a_run_records_is_what_every_reader_answers(
    warehouse: tuple[dlt.Pipeline, Path],
) -> None:
    pipeline, database = warehouse
    first = RunRecord(
        report("run-1", {"jobs": "success", "projects": "failed"}),
        "default",
        issues=[{"run_id": "run-1", "table_name": "jobs", "record_id": "j1", "problem": "x"}],
        marks={"wh_a": 1_000, "wh_b": 2_000},
        finished_at=START + timedelta(minutes=1),
    )
    record(pipeline, first)
    second = RunRecord(
        report("run-2", {"jobs": "success", "projects": "success"}),
        "default",
        marks={"wh_a": 3_000},
        finished_at=START + timedelta(minutes=2),
    )
    record(pipeline, second)
    with pipeline.sql_client() as client:
        through_pipeline = pipeline_reader(client)
        assert through_pipeline.job_syncs() == 2
        assert through_pipeline.delivery_marks() == {"wh_a": 3_000, "wh_b": 2_000}
    connection, state = read_only(database)
    with connection:
        assert state.has_runs() and state.job_syncs() == 2
        assert state.delivery_marks() == {"wh_a": 3_000, "wh_b": 2_000}
        assert state.last_successes() == {
            "jobs": START + timedelta(minutes=2),
            "projects": START + timedelta(minutes=2),
        }
        newest = state.newest_run()
        assert newest is not None and newest.run_id == "run-2"
        good = state.newest_good_run()
        assert good is not None and good.run_id == "run-2"
        issues = connection.sql(f"SELECT record_id, workspace FROM {DATASET}._sync_issues")
        assert issues.fetchall() == [("j1", "default")]


def test_a_failed_table_is_the_latest_attempt_and_not_a_good_run(
    warehouse: tuple[dlt.Pipeline, Path],
) -> None:
    pipeline, database = warehouse
    failed = report("run-1", {"jobs": "success", "projects": "failed"})
    record(pipeline, RunRecord(failed, "acme", finished_at=START))
    connection, state = read_only(database)
    with connection:
        assert set(state.last_successes()) == {"jobs"}
        latest = state.latest_attempts()
        assert latest["projects"].status == "failed"
        assert latest["projects"].error == "projects: broke"
        assert state.newest_good_run() is None, "a run with a failed table is not a good run"
        assert state.delivery_marks() == {}, "the marks table exists, empty: marks are recorded"


def test_rows_of_a_load_that_never_completed_do_not_count(
    warehouse: tuple[dlt.Pipeline, Path],
) -> None:
    """A load package whose other jobs failed is not in `_dlt_loads`: its job sync must not
    move the rolling slice, nor its marks the delivery walk's stop."""
    pipeline, database = warehouse
    done = RunRecord(report("run-1", {"jobs": "success"}), "default", marks={"wh_a": 1_000})
    record(pipeline, done)
    with duckdb.connect(str(database)) as connection:
        connection.execute(
            f"INSERT INTO {DATASET}._sync_runs SELECT * REPLACE"
            " ('run-2' AS run_id, 'never-completed' AS _dlt_load_id)"
            f" FROM {DATASET}._sync_runs"
        )
        connection.execute(
            f"INSERT INTO {DATASET}._sync_delivery_marks (run_id, webhook_id, newest_ms,"
            " recorded_at, _dlt_load_id, _dlt_id) VALUES"
            " ('run-2', 'wh_a', 9000, now(), 'never-completed', 'x')"
        )
    connection, state = read_only(database)
    with connection:
        assert state.job_syncs() == 1
        assert state.delivery_marks() == {"wh_a": 1_000}
