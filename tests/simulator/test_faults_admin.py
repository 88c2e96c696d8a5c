"""Each fault kind as a client sees it, the admin switch, stats and churn."""

from __future__ import annotations

import time

import httpx
import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .helpers import walk

pytestmark = pytest.mark.e2e


def test_admin_is_off_by_default() -> None:
    with running_simulator(admin=False) as h, h.client() as c:
        for method, path in [
            ("PUT", "/_admin/faults"),
            ("GET", "/_admin/stats"),
            ("POST", "/_admin/stats/reset"),
            ("POST", "/_admin/churn"),
            ("POST", "/_admin/deliveries/wait"),
        ]:
            r = c.request(method, path, json={})
            assert r.status_code == 404, path
        assert c.get("/v1/projects").status_code == 200


@pytest.mark.parametrize("kind", ["500", "502", "503"])
def test_server_errors(sim: SimulatorHandle, full: httpx.Client, kind: str) -> None:
    sim.set_faults(f"{kind}:1.0")
    try:
        r = full.get("/v1/projects")
        assert r.status_code == int(kind) and "message" in r.json()
        # writes are never faulted
        assert full.post("/v1/job-types", json={"name": "ok"}).status_code == 201
    finally:
        sim.set_faults(None)
    assert full.get("/v1/projects").status_code == 200


def test_rate_limit(sim: SimulatorHandle, full: httpx.Client) -> None:
    sim.set_faults("429:1.0")
    try:
        r = full.get("/v1/team")
        assert r.status_code == 429
        assert r.headers["Retry-After"] == "1"
        assert r.json() == {"message": "Too many requests"}
    finally:
        sim.set_faults(None)


def test_reset_mid_body(sim: SimulatorHandle, full: httpx.Client) -> None:
    sim.set_faults("reset:1.0")
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            full.get("/v1/projects")
    finally:
        sim.set_faults(None)
    assert full.get("/v1/projects").status_code == 200


def test_truncated_body(sim: SimulatorHandle, full: httpx.Client) -> None:
    good = full.get("/v1/projects").content
    sim.set_faults("truncate:1.0")
    try:
        r = full.get("/v1/projects")
    finally:
        sim.set_faults(None)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert int(r.headers["content-length"]) == len(r.content) < len(good)
    assert good.startswith(r.content)
    with pytest.raises(ValueError):
        r.json()


def test_faults_are_seeded_and_mixed() -> None:
    spec = "429:0.2,503:0.2,truncate:0.1"

    def run() -> list[int]:
        statuses = []
        with running_simulator(seed=5, faults=spec) as h, h.client() as c:
            for _ in range(60):
                r = c.get("/v1/job-types")
                ok_json = r.status_code == 200 and r.content.endswith(b"}")
                statuses.append(r.status_code if r.status_code != 200 or ok_json else -1)
        return statuses

    first = run()
    assert first == run()
    assert {200, 429, 503, -1} <= set(first)


def test_faults_never_change_state(sim: SimulatorHandle, full: httpx.Client) -> None:
    before = walk(full, "/v1/projects", "projects")
    sim.set_faults("500:0.5")
    try:
        for _ in range(20):
            full.get("/v1/projects")
    finally:
        sim.set_faults(None)
    assert walk(full, "/v1/projects", "projects") == before


def test_bad_fault_spec_is_400(sim: SimulatorHandle, full: httpx.Client) -> None:
    r = full.put("/_admin/faults", json={"faults": "teapot:0.5"})
    assert r.status_code == 400
    r = full.put("/_admin/faults", json={"faults": "500:0.7,503:0.7"})
    assert r.status_code == 400


def test_latency() -> None:
    import time

    with running_simulator(latency_ms=50) as h, h.client() as c:
        start = time.perf_counter()
        for _ in range(5):
            assert c.get("/v1/team").status_code == 200
        assert time.perf_counter() - start >= 0.25


def test_stats_count_by_route_template(sim: SimulatorHandle, full: httpx.Client) -> None:
    sim.reset_stats()
    assert sim.stats() == {"requests": {}, "total": 0}
    pid = full.get("/v1/projects").json()["projects"][0]["id"]
    full.get(f"/v1/projects/{pid}/jobs")
    full.get(f"/v1/projects/{pid}/jobs")
    wid = full.get("/v1/webhooks").json()["webhooks"][0]["id"]
    full.get(f"/v1/webhooks/{wid}")
    full.get("/openapi.json")
    stats = sim.stats()
    assert stats["requests"] == {
        "GET /v1/projects": 1,
        "GET /v1/projects/{projectId}/jobs": 2,
        "GET /v1/webhooks": 1,
        "GET /v1/webhooks/{webhookId}": 1,
    }
    assert stats["total"] == 5


def test_churn_is_deterministic_and_cascades() -> None:
    def run() -> tuple[dict[str, int], list[dict[str, object]]]:
        with running_simulator(
            seed=9, scale="small", extra_args=("--anchor-date", "2026-01-01")
        ) as h:
            result = h.churn(
                seed=4, update_fraction=0.1, delete_fraction=0.05, new_deliveries_per_webhook=7
            )
            with h.client() as c:
                rows = walk(c, "/v1/projects", "projects")
                wid = c.get("/v1/webhooks").json()["webhooks"][0]["id"]
                logs = c.get(f"/v1/webhooks/{wid}").json()
            assert h.counts()["projects"] == 60 - result["projects_deleted"]
        stable = [{k: v for k, v in p.items() if k != "updated"} for p in rows]
        assert logs["logs"][0]["created"] >= logs["logs"][7]["created"]
        return result, stable

    first, rows1 = run()
    second, rows2 = run()
    assert first == second and rows1 == rows2
    assert first["projects_updated"] == 6 and first["projects_deleted"] == 3
    assert first["jobs_deleted_by_cascade"] > 0 and first["logs_added"] == 14


def test_a_closed_gate_holds_requests_until_it_opens(sim: SimulatorHandle) -> None:
    """A request sent while the gate is closed gets no answer until the gate opens."""
    from concurrent.futures import ThreadPoolExecutor

    assert sim.set_gate(True) == {"closed": True, "held": 0}
    with ThreadPoolExecutor(1) as pool, sim.client() as c:
        try:
            pending = pool.submit(c.get, "/v1/team")
            deadline = time.monotonic() + 60
            while sim.gate()["held"] < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sim.gate() == {"closed": True, "held": 1}
            assert not pending.done(), "answered through a closed gate"
        finally:
            assert sim.set_gate(False)["closed"] is False
        assert pending.result(timeout=60).status_code == 200


def test_edits_change_what_the_api_cannot(sim: SimulatorHandle, full: httpx.Client) -> None:
    """Dashboard edits: a member added with a chosen id, changed and removed; a job type renamed
    and removed; a project's own timestamps set, its list position following `created`; no
    event, and what no record holds refused."""
    added = sim.edit("team", "ab", {"email": "ab@example.com", "role": "pilot"})
    assert added["created"] == added["updated"] and added["first_name"] is None
    changed = sim.edit("team", "ab", {"first_name": "A", "last_name": "B"})
    assert changed["updated"] > added["updated"], "a change without `updated` moves it to now"
    edge = sim.edit("team", "ab", {"created": 0, "updated": 4_102_444_800_000})
    team = walk(full, "/v1/team", "team")
    assert team[0]["id"] == "ab" and team[0]["updated"] == 4_102_444_800_000 == edge["updated"]
    assert full.get("/v1/team/ab").json()["first_name"] == "A"
    assert sim.edit("team", "ab", delete=True) == {"id": "ab", "deleted": True}
    assert full.get("/v1/team/ab").status_code == 404

    type_id = full.post("/v1/job-types", json={"name": "Survey"}).json()["id"]
    assert sim.edit("job_types", type_id, {"name": "Renamed"})["name"] == "Renamed"
    assert full.get(f"/v1/job-types/{type_id}").json()["name"] == "Renamed"
    sim.edit("job_types", type_id, delete=True)
    assert full.get(f"/v1/job-types/{type_id}").status_code == 404

    project = walk(full, "/v1/projects", "projects")[-1]
    sim.edit("projects", project["id"], {"created": 0, "updated": 1})
    first = walk(full, "/v1/projects", "projects")[0]
    assert (first["id"], first["created"], first["updated"]) == (project["id"], 0, 1)

    for body in (
        {"list": "projects", "id": project["id"], "set": {"email": "x"}},
        {"list": "team", "id": "x y", "set": {"email": "x", "role": "pilot"}},
        {"list": "team", "set": {"email": "x", "role": "captain"}},
        {"list": "jobs", "id": "job_x", "set": {"updated": -1}},
        {"list": "projects", "set": {"name": "new"}},
    ):
        assert full.post("/_admin/edit", json=body).status_code == 400, body
    assert (
        full.post("/_admin/edit", json={"list": "team", "id": "nobody", "delete": True}).status_code
        == 404
    )
