"""Archive semantics, delete cascade, 204 bodies, updates and pilot assignment counts."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import httpx
import pytest

from drone_ops_sync.simulator.occurrences import occurrence_count

from .helpers import walk

pytestmark = pytest.mark.e2e

TODAY = datetime.now(UTC).date()


def new_project(full: httpx.Client, name: str = "Site") -> str:
    r = full.post(
        "/v1/projects",
        json={"name": name, "description": "d", "start_date": TODAY.isoformat()},
    )
    assert r.status_code == 201
    return str(r.json()["id"])


def new_job(full: httpx.Client, pid: str, **extra: object) -> str:
    body = {"name": "J", "type": "solar_farm", "job_pattern": "one_time"}
    body["start_date"] = TODAY.isoformat()
    body.update(extra)  # type: ignore[arg-type]
    r = full.post(f"/v1/projects/{pid}/jobs", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_archive_and_restore(full: httpx.Client) -> None:
    pid = new_project(full, "Archive me")
    assert pid in {p["id"] for p in walk(full, "/v1/projects", "projects")}
    before = full.get(f"/v1/projects/{pid}").json()
    r = full.post(f"/v1/projects/{pid}/archive", json={"archived": True})
    assert r.status_code == 200 and r.json() == {"message": "Project archived successfully"}
    after = full.get(f"/v1/projects/{pid}").json()
    assert after["archived"] is True and after["updated"] > before["updated"]
    assert pid not in {p["id"] for p in walk(full, "/v1/projects", "projects")}
    assert pid in {p["id"] for p in walk(full, "/v1/projects?archived=true", "projects")}
    # archiving again is accepted and changes nothing
    full.post(f"/v1/projects/{pid}/archive", json={"archived": True})
    assert full.get(f"/v1/projects/{pid}").json() == after
    r = full.post(f"/v1/projects/{pid}/archive", json={"archived": False})
    assert r.json() == {"message": "Project restored successfully"}
    assert pid in {p["id"] for p in walk(full, "/v1/projects", "projects")}
    assert pid not in {p["id"] for p in walk(full, "/v1/projects?archived=true", "projects")}


def test_archived_project_is_still_readable_and_writable(full: httpx.Client) -> None:
    pid = new_project(full)
    full.post(f"/v1/projects/{pid}/archive", json={"archived": True})
    assert full.get(f"/v1/projects/{pid}").status_code == 200
    assert full.patch(f"/v1/projects/{pid}", json={"name": "still"}).status_code == 200
    assert full.get(f"/v1/projects/{pid}/jobs").status_code == 200


def test_delete_cascades_and_returns_empty_204(full: httpx.Client) -> None:
    pid = new_project(full, "Doomed")
    jobs = [new_job(full, pid) for _ in range(3)]
    pilot = full.get("/v1/team", params={"role": "pilot"}).json()["team"][0]["id"]
    assert (
        full.post(f"/v1/projects/{pid}/jobs/{jobs[0]}/assign", json={"pilots": [pilot]}).status_code
        == 200
    )
    r = full.delete(f"/v1/projects/{pid}")
    assert r.status_code == 204 and r.content == b""
    assert "content-type" not in r.headers or r.headers.get("content-length") in (None, "0")
    assert full.get(f"/v1/projects/{pid}").json() == {"message": "Project not found"}
    assert full.get(f"/v1/projects/{pid}/jobs").status_code == 404
    for j in jobs:
        assert full.get(f"/v1/projects/{pid}/jobs/{j}").status_code == 404
    r = full.post(f"/v1/projects/{pid}/jobs/{jobs[0]}/unassign", json={"pilots": [pilot]})
    assert r.status_code == 404
    assert full.delete(f"/v1/projects/{pid}").status_code == 404


def test_delete_job_returns_empty_204(full: httpx.Client) -> None:
    pid = new_project(full)
    jid = new_job(full, pid)
    r = full.delete(f"/v1/projects/{pid}/jobs/{jid}")
    assert r.status_code == 204 and r.content == b""
    assert full.get(f"/v1/projects/{pid}/jobs/{jid}").json() == {"message": "Job not found"}
    assert walk(full, f"/v1/projects/{pid}/jobs", "jobs") == []


def test_patch_changes_only_sent_fields_and_bumps_updated(full: httpx.Client) -> None:
    pid = new_project(full)
    before = full.get(f"/v1/projects/{pid}").json()
    r = full.patch(f"/v1/projects/{pid}", json={"status": "other", "other_status_reason": "NOTAM"})
    assert r.status_code == 200
    after = full.get(f"/v1/projects/{pid}").json()
    assert after["status"] == "other" and after["other_status_reason"] == "NOTAM"
    assert after["updated"] > before["updated"] and after["created"] == before["created"]
    assert {
        k: v for k, v in after.items() if k not in ("status", "other_status_reason", "updated")
    } == {k: v for k, v in before.items() if k not in ("status", "other_status_reason", "updated")}
    full.patch(f"/v1/projects/{pid}", json={"status": "planned"})
    assert full.get(f"/v1/projects/{pid}").json()["other_status_reason"] is None
    full.patch(f"/v1/projects/{pid}", json={"end_date": "2099-01-01", "external_id": "E-1"})
    full.patch(f"/v1/projects/{pid}", json={"end_date": None, "external_id": None})
    got = full.get(f"/v1/projects/{pid}").json()
    assert got["end_date"] is None and got["external_id"] is None


def test_patch_job(full: httpx.Client) -> None:
    pid = new_project(full)
    jid = new_job(full, pid)
    before = full.get(f"/v1/projects/{pid}/jobs/{jid}").json()
    r = full.patch(f"/v1/projects/{pid}/jobs/{jid}", json={"priority": "high", "name": "Renamed"})
    assert r.status_code == 200
    after = full.get(f"/v1/projects/{pid}/jobs/{jid}").json()
    assert after["priority"] == "high" and after["name"] == "Renamed"
    assert after["updated"] > before["updated"]
    r = full.patch(f"/v1/projects/{pid}/jobs/{jid}", json={"latitude": 100, "longitude": 0})
    assert r.json() == {"message": "latitude must be between -90 and 90"}


@pytest.mark.parametrize(
    "rule",
    [
        {"job_pattern": "one_time"},
        {"job_pattern": "recurring"},
        {"job_pattern": "recurring", "recurring_frequency": "flexible"},
        {"job_pattern": "recurring", "recurring_frequency": "daily", "recurring_interval": 3},
        {
            "job_pattern": "recurring",
            "recurring_frequency": "weekly",
            "selected_days_of_week": [1, 4],
            "end_date": "__plus60",
        },
        {
            "job_pattern": "recurring",
            "recurring_frequency": "monthly",
            "weeks_of_month": [1, -1],
            "selected_days_of_week": [2],
        },
        {"job_pattern": "recurring", "recurring_frequency": "yearly", "recurring_interval": 1},
    ],
)
def test_assign_unassign_counts_follow_occurrences(
    full: httpx.Client, rule: dict[str, object]
) -> None:
    pid = new_project(full)
    if rule.get("end_date") == "__plus60":
        rule = {**rule, "end_date": (TODAY + timedelta(days=60)).isoformat()}
    jid = new_job(full, pid, **rule)
    job = full.get(f"/v1/projects/{pid}/jobs/{jid}").json()
    n = occurrence_count(job, 365)
    assert n >= 1
    pilots = [m["id"] for m in full.get("/v1/team", params={"role": "pilot"}).json()["team"]]
    r = full.post(f"/v1/projects/{pid}/jobs/{jid}/assign", json={"pilots": pilots[:1]}).json()
    assert r["occurrences_per_pilot"] == n
    assert r["results"] == {"successful": n, "skipped": 0, "failed": 0}
    assert r["pilots_assigned"] == pilots[:1] and r["pilots_skipped"] == []
    assert isinstance(r["message"], str)
    r = full.post(f"/v1/projects/{pid}/jobs/{jid}/assign", json={"pilots": pilots[:2]}).json()
    assert r["results"] == {"successful": n, "skipped": n, "failed": 0}
    assert r["pilots_assigned"] == pilots[1:2] and r["pilots_skipped"] == pilots[:1]
    r = full.post(f"/v1/projects/{pid}/jobs/{jid}/unassign", json={"pilots": pilots[:2]}).json()
    assert r["pilots_removed"] == pilots[:2] and r["assignments_removed"] == 2 * n
    r2 = full.post(f"/v1/projects/{pid}/jobs/{jid}/unassign", json={"pilots": pilots[:1]})
    assert r2.status_code == 404


def test_assign_rejects_non_pilot_members(full: httpx.Client) -> None:
    pid = new_project(full)
    jid = new_job(full, pid)
    root = full.get("/v1/team", params={"role": "root"}).json()["team"][0]["id"]
    r = full.post(f"/v1/projects/{pid}/jobs/{jid}/assign", json={"pilots": [root]})
    assert r.status_code == 404 and r.json() == {"message": "One or more pilots not found"}


def test_webhook_crud(full: httpx.Client) -> None:
    r = full.post(
        "/v1/webhooks",
        json={"name": "h", "url": "https://example.org/x", "event_types": ["project.created"]},
    )
    assert r.status_code == 201
    wid = r.json()["id"]
    got = full.get(f"/v1/webhooks/{wid}").json()
    assert got["webhook"]["status"] == "active" and got["logs"] == [] and got["cursor"] is None
    # created through the API key: the key's owner, the root member, in spec 2.5's shape
    root = full.get("/v1/team", params={"role": "root"}).json()["team"][0]
    assert got["webhook"]["created_by"] == {
        k: root[k] for k in ("id", "email", "first_name", "last_name")
    }
    assert got["webhook"]["failure_count"] == 0 and got["log_count"] == 0
    assert full.patch(f"/v1/webhooks/{wid}", json={"status": "disabled"}).status_code == 200
    assert full.get(f"/v1/webhooks/{wid}").json()["webhook"]["status"] == "disabled"
    r = full.post("/v1/webhooks", json={"name": "h", "url": "ftp://x", "event_types": ["a"]})
    assert r.status_code == 400
    assert full.delete(f"/v1/webhooks/{wid}").status_code == 204
    assert full.get(f"/v1/webhooks/{wid}").status_code == 404


def test_generated_job_dates_are_consistent(full: httpx.Client) -> None:
    for p in walk(full, "/v1/projects", "projects"):
        assert p["updated"] >= p["created"]
        if p["end_date"] is not None:
            assert date.fromisoformat(p["end_date"]) > date.fromisoformat(p["start_date"])
        for j in walk(full, f"/v1/projects/{p['id']}/jobs", "jobs"):
            assert j["updated"] >= j["created"]
            if j["end_date"] is not None:
                assert j["end_date"] >= j["start_date"]
            assert (j["latitude"] is None) == (j["longitude"] is None)
            if j["job_pattern"] == "one_time":
                assert j["recurring_frequency"] is None
