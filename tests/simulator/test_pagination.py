"""Keyset pagination: page size 50, stable order, no skip or repeat under concurrent change."""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import orjson
import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .helpers import walk

pytestmark = pytest.mark.e2e

TODAY = datetime.now(UTC).date().isoformat()


@pytest.fixture(scope="module")
def small() -> Iterator[SimulatorHandle]:
    args = (
        "--anchor-date",
        "2026-06-01",
        "--projects",
        "230",
        "--jobs-per-project",
        "2",
        "--members",
        "120",
    )
    with running_simulator(seed=7, scale="small", extra_args=args) as h:
        yield h


def test_page_size_and_order(small: SimulatorHandle) -> None:
    with small.client(full=False) as c:
        first = c.get("/v1/projects").json()
        assert first["count"] == len(first["projects"]) == 50
        assert isinstance(first["cursor"], str)
        rows = walk(c, "/v1/projects", "projects")
        keys = [(p["created"], p["id"]) for p in rows]
        assert keys == sorted(keys)
        assert len({p["id"] for p in rows}) == len(rows)
        assert all(not p["archived"] for p in rows)
        archived = walk(c, "/v1/projects?archived=true", "projects")
        assert archived and all(p["archived"] for p in archived)
        assert len(rows) + len(archived) == 230
        team = walk(c, "/v1/team", "team")
        assert len(team) == 120 == len({m["id"] for m in team})
        assert [(m["created"], m["id"]) for m in team] == sorted(
            (m["created"], m["id"]) for m in team
        )
        page = c.get("/v1/team").json()
        assert page["count"] == 50 == len(page["team"]) and page["cursor"]
        pilots = c.get("/v1/team", params={"role": "pilot"}).json()
        assert pilots["count"] == 50 and pilots["cursor"]


def test_status_and_archived_filters(small: SimulatorHandle) -> None:
    with small.client(full=False) as c:
        all_rows = walk(c, "/v1/projects", "projects")
        want = {"completed", "in_progress"}
        filtered = walk(c, "/v1/projects?status=completed,in_progress", "projects")
        assert filtered == [p for p in all_rows if p["status"] in want]
        r = c.get("/v1/projects", params={"status": "completed,nope"})
        assert r.status_code == 400 and r.json()["message"].startswith("status must be one of: ")
        r = c.get("/v1/projects", params={"archived": "yes"})
        assert r.status_code == 400
        assert r.json() == {"message": 'archived must be "true" or "false"'}
        assert walk(c, "/v1/projects?archived=false", "projects") == all_rows
        # an empty value is an absent one: the default applies (spec 4.1: non-archived, all)
        assert walk(c, "/v1/projects?archived=&status=", "projects") == all_rows
        r = c.get("/v1/projects", params={"status": "completed, in_progress"})
        assert r.status_code == 400  # a comma list, as the document's pattern says


def test_role_filter(small: SimulatorHandle) -> None:
    with small.client(full=False) as c:
        everyone = walk(c, "/v1/team", "team")
        assert walk(c, "/v1/team?role=all", "team") == everyone
        for role in ("root", "project_manager", "ops_lead", "pilot", "client"):
            rows = walk(c, f"/v1/team?role={role}", "team")
            assert rows == [m for m in everyone if m["role"] == role]
        assert all("status" in m for m in everyone)
        single = c.get(f"/v1/team/{everyone[0]['id']}").json()
        assert "status" not in single
        assert single == {k: v for k, v in everyone[0].items() if k != "status"}
        r = c.get("/v1/team?role=admin")
        assert r.status_code == 400
        assert walk(c, "/v1/team?role=", "team") == everyone


def test_cursor_is_this_lists_key_and_empty_is_the_first_page(small: SimulatorHandle) -> None:
    with small.client(full=False) as c:
        first = c.get("/v1/projects").json()
        assert c.get("/v1/projects", params={"cursor": ""}).json() == first
        last = first["projects"][-1]
        assert first["cursor"] == f"projects.{last['created']}.{last['id']}"
        team_cursor = c.get("/v1/team").json()["cursor"]
        r = c.get("/v1/projects", params={"cursor": team_cursor})
        assert r.status_code == 400 and r.json() == {"message": "Invalid cursor"}


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!!",
        "e30",  # {}
        base64.urlsafe_b64encode(orjson.dumps(["team", 1, "x"])).decode(),
        base64.urlsafe_b64encode(orjson.dumps(["projects", "1", "x"])).decode(),
        "%%%",
        "projects.12.x.y!",
        "projects..prj_1",
        "projects.1.",
    ],
)
def test_invalid_cursor(small: SimulatorHandle, cursor: str) -> None:
    with small.client(full=False) as c:
        r = c.get("/v1/projects", params={"cursor": cursor})
        assert r.status_code == 400 and r.json() == {"message": "Invalid cursor"}


def test_walk_with_concurrent_inserts_and_deletes(small: SimulatorHandle) -> None:
    """Rows existing for the whole walk are seen exactly once, whatever else changes."""
    rng = random.Random(3)
    with small.client(full=True) as c:
        before = {p["id"] for p in walk(c, "/v1/projects", "projects")}
        deleted: set[str] = set()
        seen: list[str] = []
        cursor = None
        for _ in range(100):
            body = c.get("/v1/projects", params={"cursor": cursor} if cursor else {}).json()
            seen.extend(p["id"] for p in body["projects"])
            # delete some rows already seen, some not yet seen; insert some new ones
            candidates = sorted(before - deleted)
            for pid in rng.sample(candidates, 3):
                assert c.delete(f"/v1/projects/{pid}").status_code == 204
                deleted.add(pid)
            for k in range(2):
                r = c.post(
                    "/v1/projects",
                    json={"name": f"new {k}", "description": "d", "start_date": TODAY},
                )
                assert r.status_code == 201
            cursor = body["cursor"]
            if cursor is None:
                break
        assert cursor is None
        assert len(seen) == len(set(seen)), "a row was repeated"
        survivors = before - deleted
        assert survivors <= set(seen), "a row that existed throughout was skipped"


def test_job_lists_and_log_pages(small: SimulatorHandle) -> None:
    small.wait_for_deliveries()  # other tests' project writes emit events
    with small.client(full=False) as c:
        hooks = walk(c, "/v1/webhooks", "webhooks")
        assert len(hooks) == 2
        wid = hooks[0]["id"]
        first = c.get(f"/v1/webhooks/{wid}").json()
        assert first["log_count"] == 50 == len(first["logs"])
        assert first["webhook"]["id"] == wid
        logs = []
        cursor = None
        for _ in range(20):
            body = c.get(f"/v1/webhooks/{wid}", params={"cursor": cursor} if cursor else {}).json()
            logs.extend(body["logs"])
            cursor = body["cursor"]
            if cursor is None:
                break
        assert len(logs) >= 500 and len(logs) == len({log["id"] for log in logs})
        keys = [(log["created"], log["id"]) for log in logs]
        assert keys == sorted(keys, reverse=True), "logs must be newest first"
        hook = first["webhook"]
        assert hook["last_triggered_at"] == logs[0]["created"]
        assert hook["failure_count"] == sum(log["status"] == "failed" for log in logs)
        project = walk(c, "/v1/projects", "projects")[0]
        jobs = walk(c, f"/v1/projects/{project['id']}/jobs", "jobs")
        assert all(j["project_id"] == project["id"] for j in jobs)
        assert [(j["created"], j["id"]) for j in jobs] == sorted(
            (j["created"], j["id"]) for j in jobs
        )
        types = walk(c, "/v1/job-types", "job_types")
        assert {"wind_turbine", "cell_tower", "solar_farm", "bridge_inspection"} <= {
            t["id"] for t in types
        }
        assert all(set(t) == {"id", "name", "icon", "is_predefined"} for t in types)


def test_job_list_page_size_is_50(full: httpx.Client) -> None:
    pid = full.get("/v1/projects").json()["projects"][0]["id"]
    for k in range(60):
        r = full.post(
            f"/v1/projects/{pid}/jobs",
            json={
                "name": f"j{k}",
                "type": "cell_tower",
                "job_pattern": "one_time",
                "start_date": TODAY,
            },
        )
        assert r.status_code == 201
    page = full.get(f"/v1/projects/{pid}/jobs").json()
    assert page["count"] == 50 and page["cursor"]
    assert len(walk(full, f"/v1/projects/{pid}/jobs", "jobs")) == 64
