"""Churn during the walk: while a sync runs (in a child process, through a proxy that spaces
its requests 20-40 ms apart), the workspace changes between its pages: inserts, updates,
deletions, projects archived and restored (moving between the two project lists), jobs added
and removed, new webhook deliveries. The churned run must succeed with no id current twice;
once the changes stop, one more run brings the warehouse to equality with the API."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import Zygote
from .fault_server import FaultServer, Proxy, Rule, latency
from .harness import Warehouse, failed_tables
from .results import ChaosResults
from .truth import duplicate_current_ids
from .watch import pending_packages

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=901, scale="small", admin=True) as handle:
        yield handle


Action = Callable[[], None]


def actions(sim: SimulatorHandle, rng: random.Random) -> list[tuple[str, Action]]:
    """Changes made through the API (full-access key) and the admin churn, in a seeded order."""
    with sim.client(full=True) as client:
        live = client.get("/v1/projects").raise_for_status().json()["projects"]
        archived = client.get("/v1/projects", params={"archived": "true"}).json()["projects"]
    live_ids = [p["id"] for p in live]
    rng.shuffle(live_ids)
    to_archive, to_delete, to_rename, with_jobs = live_ids[:4]
    to_restore = rng.choice(archived)["id"] if archived else live_ids[4]

    def call(method: str, path: str, body: object = None) -> Action:
        def run() -> None:
            with sim.client(full=True) as client:
                response = client.request(method, path, json=body)
                assert response.status_code < 300, (method, path, response.text)

        return run

    def swap_a_job() -> None:
        with sim.client(full=True) as client:
            jobs = client.get(f"/v1/projects/{with_jobs}/jobs").json()["jobs"]
            if jobs:
                client.delete(f"/v1/projects/{with_jobs}/jobs/{jobs[0]['id']}")
            client.post(
                f"/v1/projects/{with_jobs}/jobs",
                json={
                    "name": "Added mid-walk",
                    "type": jobs[0]["type"] if jobs else "wind_turbine",
                    "job_pattern": "one_time",
                    "start_date": datetime.now(UTC).date().isoformat(),
                },
            ).raise_for_status()

    churn_seed = rng.randrange(10_000)

    def admin_churn() -> None:
        sim.churn(
            seed=churn_seed,
            update_fraction=0.05,
            delete_fraction=0.01,
            new_deliveries_per_webhook=20,
        )

    changes: list[tuple[str, Action]] = [
        ("archive", call("POST", f"/v1/projects/{to_archive}/archive", {"archived": True})),
        ("restore", call("POST", f"/v1/projects/{to_restore}/archive", {"archived": False})),
        ("delete project", call("DELETE", f"/v1/projects/{to_delete}")),
        ("rename", call("PATCH", f"/v1/projects/{to_rename}", {"name": "Renamed mid-walk"})),
        (
            "insert project",
            call(
                "POST",
                "/v1/projects",
                {
                    "name": "Created mid-walk",
                    "description": "Inserted while a sync walked",
                    "status": "planned",
                    "start_date": datetime.now(UTC).date().isoformat(),
                },
            ),
        ),
        ("swap a job", swap_a_job),
        ("admin churn", admin_churn),
    ]
    rng.shuffle(changes)
    return changes


@pytest.mark.parametrize("seed", [1, 2])
def test_churn_between_pages_then_a_quiet_run_equals_the_api(
    seed: int,
    sim: SimulatorHandle,
    zygote: Zygote,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    rng = random.Random(f"chaos-churn:{seed}")
    warehouse = Warehouse(tmp_path)
    if seed != 1:  # the first case churns a first load, the others an incremental run
        assert warehouse.run(sim.base_url, sim.read_key).ok
    sim.wait_for_deliveries()
    changes = actions(sim, rng)
    triggers = sorted(rng.sample(range(3, 80), len(changes)))
    proxy = Proxy(sim.base_url, [Rule(r"/v1/.*", 1.0, latency(0.02, 0.04, seed))])
    done: list[str] = []
    with FaultServer(proxy) as server:
        child = warehouse.child(server.base_url, sim.read_key, zygote=zygote)
        deadline = time.monotonic() + 600  # a bound for a hung run, not a pace
        try:
            for (name, change), at in zip(changes, triggers, strict=True):
                while child.alive() and server.count(r"/v1/.*") < at:
                    assert time.monotonic() < deadline, f"the churned run hung: {child.output()}"
                    time.sleep(0.002)
                if not child.alive():
                    break
                change()
                done.append(f"{name}@{server.count(r'/v1/.*')}")
            exit_code = child.wait(120)
        finally:
            child.stop()
    proxy.close()
    result = child.result()
    assert exit_code == 0 and result is not None, child.output()
    duplicates = duplicate_current_ids(warehouse.database, warehouse.dataset)
    pending = pending_packages(warehouse.pipelines_dir)
    sim.wait_for_deliveries()
    catch_up = warehouse.run(sim.base_url, sim.read_key)
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind="churn-during-walk",
        run_ok=bool(result.get("ok")),
        note=f"changes at request counts: {done}",
    )
    assert len(done) >= 4, f"most changes landed during the walk: {done}"
    assert result.get("ok"), f"the churned run failed: {result}"
    assert not duplicates, f"the churned run left duplicate current rows: {duplicates}"
    assert not pending, pending
    assert catch_up.ok, failed_tables(catch_up)
