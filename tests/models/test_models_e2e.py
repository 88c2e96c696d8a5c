"""End to end: simulator over HTTP, the real sync, `dbt build`, marts checked against the API.

What is checked: open jobs per project and deliveries/failures per webhook equal what the API
says, and every job's calendar count equals the occurrence count the simulator reports when a
pilot is assigned.
"""

from __future__ import annotations

import pathlib
from collections import Counter

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.dbt_build import build_models
from drone_ops_sync.pipelines.publish.questions import answer_questions
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import running_simulator
from tests.pipelines.warehouse_check import api_snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLOSED = {"completed", "cancelled", "aborted"}


def test_marts_agree_with_the_api(tmp_path: pathlib.Path) -> None:
    with running_simulator(seed=7, scale="small", admin=True) as handle:
        target = Target(database=tmp_path / "warehouse.duckdb", pipelines_dir=tmp_path / "dlt")
        outcome = run_sync(
            target,
            config=read_source_config({"base_url": handle.base_url, "api_key": handle.read_key}),
        )
        assert outcome.ok, outcome.load_error
        assert target.database is not None
        result = build_models(target.database, target.dataset, target_path=tmp_path / "dbt")
        assert result.ok, result.failures or result.error
        assert result.tests_failed == 0

        api = api_snapshot(handle.base_url, handle.read_key)
        marts = f"{target.dataset}_marts"
        with duckdb.connect(str(target.database), read_only=True) as con:
            open_jobs = dict(
                con.execute(f"select project_id, jobs_open from {marts}.dim_projects").fetchall()
            )
            delivery_rows = con.execute(
                f"select webhook_id, sum(deliveries), sum(failures)"
                f" from {marts}.fct_webhook_delivery_health_daily group by webhook_id"
            ).fetchall()
            calendar = dict(
                con.execute(f"select job_id, planned_occurrences from {marts}.dim_jobs").fetchall()
            )
            occurrence_context = con.execute(
                f"select distinct job_id, project_id, project_name, job_status, is_job_open"
                f" from {marts}.fct_job_occurrences"
            ).fetchall()
            pilot = con.execute(
                f"select team_member_id from {marts}.dim_team_members where is_pilot limit 1"
            ).fetchone()

        expected_open = Counter(
            job["project_id"] for job in api["jobs"].values() if job["status"] not in CLOSED
        )
        assert open_jobs == {pid: expected_open.get(pid, 0) for pid in api["projects"]}

        deliveries = Counter(entry["webhook_id"] for entry in api["webhook_deliveries"].values())
        failures = Counter(
            entry["webhook_id"]
            for entry in api["webhook_deliveries"].values()
            if entry["status"] != "success"
        )
        assert {hook: (n, f) for hook, n, f in delivery_rows} == {
            hook: (n, failures.get(hook, 0)) for hook, n in deliveries.items()
        }

        assert pilot is not None
        assert set(calendar) == set(api["jobs"])
        with handle.client(full=True) as client:
            for job in api["jobs"].values():
                response = client.post(
                    f"/v1/projects/{job['project_id']}/jobs/{job['id']}/assign",
                    json={"pilots": [pilot[0]]},
                )
                response.raise_for_status()
                assert calendar[job["id"]] == response.json()["occurrences_per_pilot"], job

    # each occurrence carries its job's project and status as the API states them
    assert {row[0] for row in occurrence_context} <= set(api["jobs"])
    for job_id, project_id, project_name, status, is_open in occurrence_context:
        job = api["jobs"][job_id]
        project = api["projects"][job["project_id"]]
        expected = (job["project_id"], project["name"], job["status"], job["status"] not in CLOSED)
        assert (project_id, project_name, status, is_open) == expected, job_id

    answers = answer_questions(target.database, target.dataset)
    assert len(answers) == 4
