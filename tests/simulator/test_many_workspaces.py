"""A server of many workspaces (`--workspaces N`): each answers under its own base URL with its
own keys, data and admin state, exactly as a one-workspace simulator would, and touches no
other."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from drone_ops_sync.simulator.events import DEFAULT_WORKERS
from testkit.simulator_process import SimulatorHandle, running_simulator

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def many() -> Iterator[SimulatorHandle]:
    extra = ["--workspaces", "3", "--read-key", "RK", "--full-key", "FK"]
    with running_simulator(seed=5, scale="tiny", admin=True, extra_args=extra) as sim:
        yield sim


def project_ids(sim: SimulatorHandle) -> list[str]:
    with sim.client(full=False) as client:
        response = client.get("/v1/projects", params={"limit": 100})
        response.raise_for_status()
        return [project["id"] for project in response.json()["projects"]]


def test_each_workspace_is_the_one_workspace_simulator_with_its_seed(
    many: SimulatorHandle,
) -> None:
    assert many.read_key == "RK-{n}" and many.base_url.endswith("/w/{n}")
    first = many.workspace(1)
    assert (first.read_key, first.full_key) == ("RK-1", "FK-1")
    with running_simulator(seed=6, scale="tiny", admin=False) as alone:
        assert project_ids(first) == project_ids(alone)
    assert project_ids(many.workspace(0)) != project_ids(first)


def test_a_key_opens_its_own_workspace_only(many: SimulatorHandle) -> None:
    zero, two = many.workspace(0), many.workspace(2)
    with httpx.Client(trust_env=False, timeout=10) as client:
        for key, url, status in [
            (zero.read_key, zero.base_url, 200),
            (two.read_key, zero.base_url, 401),
            (zero.read_key, two.base_url, 401),
        ]:
            response = client.get(f"{url}/v1/projects", headers={"Authorization": f"Bearer {key}"})
            assert response.status_code == status, (url, response.text)
        outside = client.get(many.base_url.format(n=3) + "/v1/projects")
        assert outside.status_code == 404 and "/w/2" in outside.json()["message"]


def test_admin_state_is_per_workspace(many: SimulatorHandle) -> None:
    zero, one = many.workspace(0), many.workspace(1)
    before = one.counts()
    zero_before = zero.counts()
    zero.churn(seed=1, update_fraction=0.0, delete_fraction=0.5)
    assert zero.counts() != zero_before
    assert one.counts() == before
    zero.reset_stats()
    project_ids(one)
    assert zero.stats()["total"] == 0 and one.stats()["total"] > 0


def threads_of(sim: SimulatorHandle) -> int:
    with open(f"/proc/{sim.process.pid}/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def test_a_workspace_starts_its_senders_at_its_first_delivery() -> None:
    """Created and read, a workspace runs no thread of its own; its first event starts its
    senders, which deliver it (the generated webhook's receiver is simulated)."""
    extra = ["--workspaces", "3"]
    with running_simulator(seed=8, scale="tiny", admin=True, extra_args=extra) as sim:
        started = threads_of(sim)
        workspaces = [sim.workspace(n) for n in range(3)]
        for ws in workspaces:
            project_ids(ws)
        assert threads_of(sim) == started
        with workspaces[1].client() as client:
            body = {"name": "Senders", "description": "d", "start_date": "2030-01-01"}
            client.post("/v1/projects", json=body).raise_for_status()
        workspaces[1].wait_for_deliveries(timeout=30)
        assert threads_of(sim) == started + DEFAULT_WORKERS
        (delivery,) = workspaces[1].deliveries()
        assert delivery["event"] == "project.created" and len(delivery["attempts"]) == 1
        assert workspaces[0].deliveries() == [] == workspaces[2].deliveries()


def test_arrivals_count_api_requests_until_reset(many: SimulatorHandle) -> None:
    """The host's arrivals count every workspace's API requests and no admin request; a reset
    forgets them, so what is read next is what came after it."""
    host = many.base_url.split("/w/")[0]
    with httpx.Client(base_url=host, trust_env=False, timeout=10) as client:
        assert client.get("/_host/arrivals/reset").status_code == 405
        client.post("/_host/arrivals/reset").raise_for_status()
        for n in (0, 1, 1):
            project_ids(many.workspace(n))
        many.workspace(2).counts()
        assert client.get("/_host/arrivals", params={"window": 60}).json() == {
            "total": 3,
            "peak": 3,
        }
        assert client.post("/_host/arrivals/reset").json() == {"forgotten": 3}
        project_ids(many.workspace(2))
        assert client.get("/_host/arrivals", params={"window": 60}).json()["total"] == 1
