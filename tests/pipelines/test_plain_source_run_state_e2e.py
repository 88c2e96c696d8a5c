"""The run-state tables under a plain `pipeline.run(drone_ops())`, with no `drone-sync run`
around it: the source records its own runs, so the rolling job refresh moves on from slice to
slice, `drone-sync status` and `dbt source freshness` answer on its warehouse, and the models'
`_webhook_events` exists before any event was received. Real simulator over HTTP, real DuckDB
files."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import dlt
import pytest

from drone_ops_sync.sources.drone_ops import drone_ops
from drone_ops_sync.sources.drone_ops.walk.rolling import job_slice_of

from ..models.test_source_freshness import freshness
from .cli_helpers import EXIT_OK, cli_env, run_cli
from .warehouse_check import api_snapshot, query

pytestmark = pytest.mark.e2e

SLICES = 3


def plain_duckdb(tmp_path: Path) -> tuple[dlt.Pipeline, Path]:
    database = tmp_path / "plain.duckdb"
    pipeline = dlt.pipeline(
        pipeline_name=f"plain_{uuid.uuid4().hex[:8]}",
        destination=dlt.destinations.duckdb(str(database)),
        dataset_name="drone_ops",
        pipelines_dir=str(tmp_path / "dlt"),
    )
    return pipeline, database


def configure(monkeypatch: pytest.MonkeyPatch, sim: Any, **settings: str) -> None:
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", sim.base_url)
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", sim.read_key)
    for name, value in settings.items():
        monkeypatch.setenv(f"SOURCES__DRONE_OPS__{name.upper()}", value)


def test_the_rolling_refresh_walks_every_slice_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_sim: Any
) -> None:
    """With `job_refresh_slices = 3`, a job changed in an unchanged project of each slice
    arrives within three plain runs: each run walks the next slice, as under `drone-sync run`."""
    configure(monkeypatch, tiny_sim, job_refresh_slices=str(SLICES))
    pipeline, database = plain_duckdb(tmp_path)
    pipeline.run(drone_ops(), loader_file_format="parquet")
    api = api_snapshot(tiny_sim.base_url, tiny_sim.read_key)
    first_job: dict[str, str] = {}
    for job_id, job in sorted(api["jobs"].items()):
        first_job.setdefault(job["project_id"], job_id)
    per_slice = {
        job_slice_of(project, SLICES): project for project in sorted(first_job, reverse=True)
    }
    assert sorted(per_slice) == list(range(SLICES)), "the workspace has jobs in every slice"
    renamed = {}
    with tiny_sim.client(full=True) as client:
        for piece, project in per_slice.items():
            job_id = first_job[project]
            renamed[job_id] = f"Changed in slice {piece}"
            client.patch(
                f"/v1/projects/{project}/jobs/{job_id}", json={"name": renamed[job_id]}
            ).raise_for_status()
    tiny_sim.wait_for_deliveries(timeout=30)
    for _ in range(SLICES):
        pipeline.run(drone_ops(), loader_file_format="parquet")
    names = {
        row["id"]: row["name"]
        for row in query(
            database, "SELECT id, name FROM drone_ops.jobs WHERE _dlt_valid_to IS NULL"
        )
    }
    assert {job_id: names.get(job_id) for job_id in renamed} == renamed
    scopes = query(
        database,
        "SELECT scope FROM drone_ops._sync_runs WHERE resource = 'jobs' AND status = 'success'"
        " ORDER BY finished_at",
    )
    assert len(scopes) == SLICES + 1 and scopes[0]["scope"] is None, scopes
    # run k walks slice k mod 3, which the scope names counting from 1
    walked = [
        f"slice {k % SLICES + 1} of {SLICES}" in str(row["scope"]) for k, row in enumerate(scopes)
    ]
    assert walked[1:] == [True] * SLICES, scopes


def test_status_and_source_freshness_answer_on_a_plain_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_sim: Any
) -> None:
    """A warehouse only the plain source ever loaded: `drone-sync status` says fresh for every
    table, `dbt source freshness` passes, and the receiver's `_webhook_events` exists empty, so
    the models that read it build before any event arrived."""
    configure(monkeypatch, tiny_sim)
    pipeline, database = plain_duckdb(tmp_path)
    pipeline.run(drone_ops(), loader_file_format="parquet")
    env = cli_env(tmp_path)
    status = run_cli(["status", "--database", str(database)], env, tmp_path)
    assert status.code == EXIT_OK, status.describe()
    assert len(status.lines()) == 7, status.describe()
    assert all(line.startswith("fresh: ") for line in status.lines()), status.describe()
    assert freshness(tmp_path / "dbt", database) == "pass"
    events = query(database, "SELECT count(*) AS n FROM drone_ops._webhook_events")
    assert events == [{"n": 0}]
    marked = query(database, "SELECT DISTINCT webhook_id FROM drone_ops._sync_delivery_marks")
    logged = query(database, "SELECT DISTINCT webhook_id FROM drone_ops.webhook_deliveries")
    assert logged and {row["webhook_id"] for row in marked} == {
        row["webhook_id"] for row in logged
    }, "each webhook's early stop starts from the mark this run recorded"
