"""Part 5 on every endpoint: 401 without a valid key, 403 for read_only on writes; plus 404/405."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from testkit.simulator_process import SimulatorHandle

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def ids(full: httpx.Client) -> dict[str, str]:
    project = full.get("/v1/projects").json()["projects"][0]["id"]
    job = full.get(f"/v1/projects/{project}/jobs").json()["jobs"][0]["id"]
    member = full.get("/v1/team").json()["team"][0]["id"]
    webhook = full.get("/v1/webhooks").json()["webhooks"][0]["id"]
    return {"p": project, "j": job, "m": member, "w": webhook}


def endpoints(i: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    p, j = f"/v1/projects/{i['p']}", f"/v1/projects/{i['p']}/jobs/{i['j']}"
    return [
        ("GET", "/v1/projects", None),
        ("GET", p, None),
        ("GET", p + "/jobs", None),
        ("GET", j, None),
        ("GET", "/v1/job-types", None),
        ("GET", "/v1/job-types/wind_turbine", None),
        ("GET", "/v1/team", None),
        ("GET", f"/v1/team/{i['m']}", None),
        ("GET", "/v1/webhooks", None),
        ("GET", f"/v1/webhooks/{i['w']}", None),
        ("POST", "/v1/projects", {"name": "n", "description": "d", "start_date": "2026-01-01"}),
        ("PATCH", p, {"name": "renamed"}),
        ("POST", p + "/archive", {"archived": False}),
        ("POST", p + "/jobs", {"name": "x"}),
        ("PATCH", j, {"priority": "high"}),
        ("POST", j + "/assign", {"pilots": []}),
        ("POST", j + "/unassign", {"pilots": []}),
        ("POST", "/v1/job-types", {}),
        ("POST", "/v1/webhooks", {}),
        ("PATCH", f"/v1/webhooks/{i['w']}", {"name": "renamed hook"}),
        ("DELETE", j, None),
        ("DELETE", f"/v1/webhooks/{i['w']}", None),
        ("DELETE", p, None),
    ]


BAD_HEADERS: list[dict[str, str]] = [
    {},
    {"Authorization": "Bearer not-a-key"},
    {"Authorization": "Basic dXNlcjpwYXNz"},
    {"Authorization": "Bearer"},
]


def test_every_endpoint_rejects_missing_or_invalid_keys(
    sim: SimulatorHandle, ids: dict[str, str]
) -> None:
    with httpx.Client(base_url=sim.base_url, timeout=10, trust_env=False) as anon:
        for method, path, body in endpoints(ids):
            for headers in BAD_HEADERS:
                r = anon.request(method, path, json=body, headers=headers)
                assert r.status_code == 401, (method, path, headers)
                assert r.json() == {"message": "Missing or invalid API key"}


def test_read_only_key_reads_but_may_not_write(
    read: httpx.Client, full: httpx.Client, ids: dict[str, str]
) -> None:
    for method, path, body in endpoints(ids):
        r = read.request(method, path, json=body)
        if method == "GET":
            assert r.status_code == 200, (path, r.text)
        else:
            assert r.status_code == 403, (method, path)
            message = r.json()["message"]
            assert message.startswith("This API key has read_only scope; ")
            assert message.endswith(" requires full_access")
            assert f" {method} /v1/" in message
    # nothing changed
    assert full.get(f"/v1/projects/{ids['p']}").status_code == 200


def test_full_key_may_do_everything(full: httpx.Client, ids: dict[str, str]) -> None:
    for method, path, body in endpoints(ids):
        r = full.request(method, path, json=body)
        assert r.status_code not in (401, 403), (method, path)
        assert r.status_code < 500
        if method == "DELETE":
            assert r.status_code == 204 and r.content == b""


def test_unknown_paths_and_methods(full: httpx.Client) -> None:
    r = full.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json() == {"message": "Not found"}
    r = full.get("/projects")
    assert r.status_code == 404
    r = full.put("/v1/projects")
    assert r.status_code == 405 and r.json() == {"message": "Method not allowed"}
    assert r.headers["allow"] == "GET, HEAD, POST"
    r = full.delete("/v1/team")
    assert r.status_code == 405


def test_admin_requires_full_key(sim: SimulatorHandle, read: httpx.Client) -> None:
    assert read.get("/_admin/stats").status_code == 401
    with httpx.Client(base_url=sim.base_url, trust_env=False) as anon:
        assert anon.get("/_admin/stats").status_code == 401
