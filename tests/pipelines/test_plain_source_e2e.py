"""The source as any dlt user runs it: `pipeline.run(drone_ops())`, settings from dlt's config
(the environment here), on DuckDB and PostgreSQL, with no `drone-sync` around it. It keeps the
contract: equal to the API, history, deletions retired only when confirmed, the mass-delete
guard, users, and the delivery early stop."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import dlt
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed

from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops import drone_ops

from .test_sync_e2e import assert_equals_api, row_counts, warehouse_of
from .warehouse_check import api_snapshot, query

pytestmark = pytest.mark.e2e


def plain_pipeline(destination: Any, tmp_path: Path) -> dlt.Pipeline:
    return dlt.pipeline(
        pipeline_name=f"plain_{uuid.uuid4().hex[:8]}",
        destination=destination,
        dataset_name="drone_ops",
        pipelines_dir=str(tmp_path / "dlt"),
    )


@pytest.fixture(params=["duckdb", "postgres"])
def plain(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_sim: Any
) -> tuple[dlt.Pipeline, Target]:
    """A plain dlt pipeline, and the Target that reads the same warehouse for the checks."""
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", tiny_sim.base_url)
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", tiny_sim.read_key)
    if request.param == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", dsn)
        return plain_pipeline("postgres", tmp_path), Target(destination="postgres")
    database = tmp_path / "plain.duckdb"
    destination = dlt.destinations.duckdb(str(database))
    return plain_pipeline(destination, tmp_path), Target(database=database)


def test_plain_source_keeps_the_contract(plain: tuple[dlt.Pipeline, Target], tiny_sim: Any) -> None:
    pipeline, target = plain
    database = warehouse_of(target)
    tiny_sim.reset_stats()
    pipeline.run(drone_ops(), loader_file_format="parquet")
    api = assert_equals_api(tiny_sim, target)
    whole_logs = tiny_sim.stats()["requests"]["GET /v1/webhooks/{webhookId}"]

    projects = sorted(p for p, record in api["projects"].items() if not record["archived"])
    changed, deleted = projects[0], projects[1]
    doomed_jobs = [j for j, job in api["jobs"].items() if job["project_id"] == deleted]
    with tiny_sim.client(full=True) as client:
        client.patch(f"/v1/projects/{changed}", json={"name": "Renamed"}).raise_for_status()
        assert client.delete(f"/v1/projects/{deleted}").status_code == 204
    tiny_sim.wait_for_deliveries()
    pipeline.run(drone_ops(), loader_file_format="parquet")
    assert_equals_api(tiny_sim, target)
    history = query(
        database,
        f"SELECT name FROM drone_ops.projects WHERE id = '{changed}' ORDER BY _dlt_valid_from",
    )
    assert [h["name"] for h in history][-1] == "Renamed" and len(history) == 2
    retired = query(
        database,
        "SELECT count(*) AS n FROM drone_ops.projects"
        f" WHERE id = '{deleted}' AND _dlt_valid_to IS NOT NULL",
    )
    assert retired[0]["n"] == 1, "a confirmed deletion is retired, its history kept"
    if doomed_jobs:
        current = query(
            database,
            "SELECT count(*) AS n FROM drone_ops.jobs WHERE _dlt_valid_to IS NULL"
            f" AND project_id = '{deleted}'",
        )
        assert current[0]["n"] == 0

    # a quiet run adds nothing, and stops each webhook's log at what the warehouse holds
    before = row_counts(target)
    tiny_sim.reset_stats()
    pipeline.run(drone_ops(), loader_file_format="parquet")
    assert row_counts(target) == before
    assert tiny_sim.stats()["requests"]["GET /v1/webhooks/{webhookId}"] < whole_logs


def test_plain_source_refuses_a_mass_delete_and_loads_nothing(
    plain: tuple[dlt.Pipeline, Target], tiny_sim: Any
) -> None:
    pipeline, target = plain
    pipeline.run(drone_ops(), loader_file_format="parquet")
    before = row_counts(target)
    ids = sorted(api_snapshot(tiny_sim.base_url, tiny_sim.read_key)["projects"])
    with tiny_sim.client(full=True) as client:
        for project_id in ids[: len(ids) // 2 + 1]:
            assert client.delete(f"/v1/projects/{project_id}").status_code == 204
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(drone_ops(), loader_file_format="parquet")
    assert "mass delete" in str(failed.value).lower() or "max_retire_share" in str(failed.value)
    assert row_counts(target) == before, "a refused run changes nothing"
    pipeline.run(drone_ops(allow_mass_delete=True), loader_file_format="parquet")
    assert_equals_api(tiny_sim, target)
