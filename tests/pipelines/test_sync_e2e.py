"""End to end: simulator over real HTTP, the sync, a real DuckDB file, compared field by field."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from drone_ops_sync.sources.drone_ops.walk.rolling import job_slice_of

from .warehouse_check import EPOCH, Warehouse, api_snapshot, current_rows, mismatches, query

pytestmark = pytest.mark.e2e

ENTITY_TABLES = ("projects", "jobs", "job_types", "team_members", "webhooks")


def warehouse_of(target: Target) -> Warehouse:
    """Where a target's rows can be read: its DuckDB file, or the PostgreSQL connection
    string the postgres fixtures put into the environment."""
    if target.destination == "postgres":
        return os.environ["DESTINATION__POSTGRES__CREDENTIALS"]
    assert target.database is not None
    return target.database


def as_json(value: Any) -> Any:
    """JSON text (DuckDB) or the value PostgreSQL's jsonb already parsed."""
    return json.loads(value) if isinstance(value, str) else value


def assert_equals_api(handle: Any, target: Target) -> dict[str, dict[str, dict[str, Any]]]:
    api = api_snapshot(handle.base_url, handle.read_key)
    database = warehouse_of(target)
    for table, records in api.items():
        problems = mismatches(records, current_rows(database, table))
        assert not problems, f"{table}: {problems[:10]}"
    creators = {
        record["created_by"]["id"]: record["created_by"]
        for table in ("projects", "webhooks")
        for record in api[table].values()
        if isinstance(record.get("created_by"), dict)
    }
    users = current_rows(database, "users")
    assert set(creators) <= set(users)
    for user_id, creator in creators.items():
        assert users[user_id]["email"] == creator.get("email")
        assert users[user_id]["kind"] == ("api_key" if creator.get("type") == "api_key" else "user")
    stored = {
        row["id"]: row
        for row in query(
            database,
            "SELECT id, delivery_id, event, workspace_id, event_timestamp, data, webhook_id"
            " FROM drone_ops.webhook_deliveries",
        )
    }
    for entry_id, entry in api["webhook_deliveries"].items():
        payload = json.loads(entry["request_payload"])
        row = stored[entry_id]
        assert row["delivery_id"] == payload["delivery_id"]
        assert row["event"] == payload["event"]
        assert row["workspace_id"] == payload["workspace_id"]
        assert row["webhook_id"] == entry["webhook_id"]
        assert as_json(row["data"]) == payload["data"]
        assert row["event_timestamp"] == EPOCH + timedelta(milliseconds=payload["timestamp"])
    return api


def row_counts(target: Target) -> dict[str, int]:
    database = warehouse_of(target)
    return {
        table: query(database, f"SELECT count(*) AS n FROM drone_ops.{table}")[0]["n"]
        for table in (*ENTITY_TABLES, "webhook_deliveries", "users")
    }


def test_lifecycle_first_sync_changes_and_quiet_rerun(sim: Any, any_target: Target) -> None:
    """The warehouse contract, on DuckDB and PostgreSQL: equal after the first sync, equal
    with history after changes, and a no-change run adds no rows and asks each webhook once."""
    target = any_target
    database = warehouse_of(target)

    def run(**kwargs: Any) -> Any:
        overrides = {"base_url": sim.base_url, "api_key": sim.read_key}
        return run_sync(target, config=read_source_config(overrides), **kwargs)

    first = run()
    assert first.ok, first.report.tables
    api = assert_equals_api(sim, target)
    assert first.report.tables["projects"].new == len(api["projects"])
    assert any(p["archived"] for p in api["projects"].values()), "small scale has archived rows"

    # a morning of changes through the API, with the full-access key
    projects = sorted(api["projects"].values(), key=lambda p: p["id"])
    live = [p for p in projects if not p["archived"]]
    archived_before = [p for p in projects if p["archived"]]
    changed, to_archive, to_delete, extended = live[0], live[1], live[2], live[3]
    to_restore = archived_before[0]
    doomed_jobs = [j["id"] for j in api["jobs"].values() if j["project_id"] == to_delete["id"]]
    assert doomed_jobs, "the deleted project should have jobs to cascade"
    some_job = next(j for j in api["jobs"].values() if j["project_id"] == extended["id"])
    with sim.client(full=True) as client:
        client.patch(
            f"/v1/projects/{changed['id']}",
            json={"status": "other", "other_status_reason": "Crane on site"},
        ).raise_for_status()
        client.post(f"/v1/projects/{to_archive['id']}/archive", json={"archived": True})
        client.post(f"/v1/projects/{to_restore['id']}/archive", json={"archived": False})
        assert client.delete(f"/v1/projects/{to_delete['id']}").status_code == 204
        assert (
            client.delete(f"/v1/projects/{extended['id']}/jobs/{some_job['id']}").status_code == 204
        )
        created = client.post(
            f"/v1/projects/{extended['id']}/jobs",
            json={
                "name": "Post-storm check",
                "type": some_job["type"],
                "job_pattern": "recurring",
                "recurring_frequency": "weekly",
                "selected_days_of_week": [1, 4],
                "start_date": datetime.now(UTC).date().isoformat(),
                "capture_types": ["lidar_scan"],
            },
        )
        assert created.status_code == 201, created.text
    sim.wait_for_deliveries()

    second = run()
    assert second.ok, second.report.tables
    api2 = assert_equals_api(sim, target)
    projects_result = second.report.tables["projects"]
    assert projects_result.changed == 3 and projects_result.retired == 1
    jobs_result = second.report.tables["jobs"]
    assert jobs_result.new == 1 and jobs_result.retired == len(doomed_jobs) + 1
    assert second.report.tables["webhook_deliveries"].new == len(api2["webhook_deliveries"]) - len(
        api["webhook_deliveries"]
    )
    history = query(
        database,
        f"SELECT status, _dlt_valid_to FROM drone_ops.projects WHERE id = '{changed['id']}'"
        " ORDER BY _dlt_valid_from",
    )
    assert [h["status"] for h in history] == [changed["status"], "other"]
    assert history[0]["_dlt_valid_to"] is not None and history[1]["_dlt_valid_to"] is None
    gone = query(
        database,
        f"SELECT count(*) AS n FROM drone_ops.jobs WHERE id IN ({_in(doomed_jobs)})"
        " AND _dlt_valid_to IS NULL",
    )
    assert gone[0]["n"] == 0, "jobs of a deleted project are retired with it"
    kept = query(
        database,
        f"SELECT count(*) AS n FROM drone_ops.jobs WHERE id IN ({_in(doomed_jobs)})",
    )
    assert kept[0]["n"] == len(doomed_jobs), "retired jobs keep their history"

    before = row_counts(target)
    sim.reset_stats()
    third = run()
    assert third.ok
    assert row_counts(target) == before, "a run with no change adds no rows"
    for table in ENTITY_TABLES:
        result = third.report.tables[table]
        assert (result.new, result.changed, result.retired) == (0, 0, 0), table
    requests = sim.stats()["requests"]
    assert requests.get("GET /v1/webhooks/{webhookId}") == len(api2["webhooks"])
    runs = query(database, "SELECT count(DISTINCT run_id) AS n FROM drone_ops._sync_runs")
    assert runs[0]["n"] == 3


def _in(ids: list[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


def test_sync_survives_injected_faults(tiny_sim: Any, sync: Any, target: Target) -> None:
    """429s, 5xx, resets and truncated bodies are retried; the result still equals the API."""
    tiny_sim.set_faults("429:0.08,503:0.08,500:0.04,reset:0.04,truncate:0.04")
    outcome = sync(tiny_sim, max_attempts=12, retry_budget_seconds=60.0)()
    tiny_sim.set_faults(None)
    assert outcome.ok, outcome.report.tables
    assert sum(r.retries for r in outcome.report.tables.values()) > 0
    assert_equals_api(tiny_sim, target)


def test_mass_delete_guard_refuses_then_flag_allows(
    tiny_sim: Any, sync: Any, target: Target
) -> None:
    run = sync(tiny_sim)
    assert run().ok
    api = api_snapshot(tiny_sim.base_url, tiny_sim.read_key)
    ids = sorted(api["projects"])
    with tiny_sim.client(full=True) as client:
        for project_id in ids[: len(ids) // 2 + 1]:
            assert client.delete(f"/v1/projects/{project_id}").status_code == 204
    refused = run()
    assert not refused.ok
    assert refused.report.tables["projects"].status == "refused"
    assert "--allow-mass-delete" in (refused.report.tables["projects"].error or "")
    assert target.database is not None
    assert len(current_rows(target.database, "projects")) == len(ids), "nothing retired"
    allowed = run(allow_mass_delete=True)
    assert allowed.ok
    assert_equals_api(tiny_sim, target)


def test_failed_table_loads_nothing_and_next_run_repairs(
    tiny_sim: Any, sync: Any, target: Target
) -> None:
    """A jobs walk that keeps failing leaves jobs as they were; the other tables load."""
    run = sync(tiny_sim, max_attempts=2, retry_budget_seconds=2.0)
    assert run().ok
    assert target.database is not None
    jobs_before = query(target.database, "SELECT * FROM drone_ops.jobs ORDER BY _dlt_id")
    with tiny_sim.client(full=True) as client:
        project = client.get("/v1/projects").json()["projects"][0]
        client.patch(f"/v1/projects/{project['id']}", json={"name": "Renamed during outage"})
        jobs = client.get(f"/v1/projects/{project['id']}/jobs").json()["jobs"]
        if jobs:
            client.delete(f"/v1/projects/{project['id']}/jobs/{jobs[0]['id']}")
    tiny_sim.set_faults("503:1.0")
    failed = run()
    tiny_sim.set_faults(None)
    assert not failed.ok
    assert failed.report.tables["projects"].status == "failed"
    assert query(target.database, "SELECT * FROM drone_ops.jobs ORDER BY _dlt_id") == jobs_before
    statuses = query(
        target.database,
        f"SELECT status, error FROM drone_ops._sync_runs WHERE run_id = '{failed.report.run_id}'"
        " AND resource = 'jobs'",
    )
    assert statuses[0]["status"] == "failed" and statuses[0]["error"]
    repaired = run()
    assert repaired.ok
    assert_equals_api(tiny_sim, target)


def test_rolling_job_refresh_lags_by_at_most_its_slices(
    sim: Any, sync: Any, target: Target
) -> None:
    """`job_refresh_slices = 3`: project changes and deletions arrive at once, a job change in an
    unchanged project within three runs, and nothing the API still shows is ever retired."""
    slices = 3
    run = sync(sim, job_refresh_slices=slices)
    first = run()
    assert first.ok and first.report.tables["jobs"].scope is None, "a first run walks every job"
    api = api_snapshot(sim.base_url, sim.read_key)
    jobs_by_project: dict[str, list[str]] = {}
    for job in api["jobs"].values():
        jobs_by_project.setdefault(job["project_id"], []).append(job["id"])
    live = sorted(p for p in api["projects"] if not api["projects"][p]["archived"])
    with_jobs = [p for p in live if len(jobs_by_project.get(p, [])) >= 2]
    # run 2 walks slice 1, run 3 slice 2, run 4 slice 0 (run k walks k mod 3 after k syncs)
    quiet = next(p for p in with_jobs if job_slice_of(p, slices) == 0)
    changed, deleted = [p for p in with_jobs if p != quiet and job_slice_of(p, slices) != 1][:2]
    lagging_job = jobs_by_project[quiet][0]
    with sim.client(full=True) as client:
        assert client.delete(f"/v1/projects/{quiet}/jobs/{lagging_job}").status_code == 204
        assert client.delete(f"/v1/projects/{deleted}").status_code == 204
        client.patch(f"/v1/projects/{changed}", json={"name": "Renamed site"}).raise_for_status()
        gone_with_change = jobs_by_project[changed][0]
        assert client.delete(f"/v1/projects/{changed}/jobs/{gone_with_change}").status_code == 204
    sim.wait_for_deliveries()
    database = target.database
    assert database is not None

    def current_job_ids() -> set[str]:
        return set(current_rows(database, "jobs"))

    sim.reset_stats()
    second = run()
    jobs = second.report.tables["jobs"]
    assert second.ok and jobs.scope is not None and "slice 2 of 3" in jobs.scope, jobs.scope
    walked = sim.stats()["requests"].get("GET /v1/projects/{projectId}/jobs", 0)
    assert 0 < walked < len(live) * 2 // 3, "a rolling run walks about a third of the projects"
    current = current_job_ids()
    assert not set(jobs_by_project[deleted]) & current, "a deleted project's jobs go at once"
    assert gone_with_change not in current, "a changed project's jobs are walked at once"
    assert lagging_job in current, "a job deleted in an unchanged project waits for its slice"
    assert jobs.retired == len(jobs_by_project[deleted]) + 1

    api_now = api_snapshot(sim.base_url, sim.read_key)
    for _ in range(slices - 1):
        outcome = run()
        assert outcome.ok
        assert set(api_now["jobs"]) <= current_job_ids(), "nothing the API shows is retired"
    assert lagging_job not in current_job_ids(), "within three runs every slice was walked"
    assert_equals_api(sim, target)
    scopes = query(
        database,
        "SELECT scope FROM drone_ops._sync_runs WHERE resource = 'jobs' ORDER BY finished_at",
    )
    assert [row["scope"] is None for row in scopes] == [True, False, False, False]

    sim.reset_stats()
    assert run(full_refresh=True).report.tables["jobs"].scope is None
    assert sim.stats()["requests"]["GET /v1/projects/{projectId}/jobs"] >= len(api_now["projects"])
