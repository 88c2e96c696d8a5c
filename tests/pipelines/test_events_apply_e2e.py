"""Events applied within seconds, end to end over real HTTP: the simulator delivers project
events to `drone-sync listen` on 127.0.0.1, which applies them to the warehouse.

What is checked: several quick updates of one project leave its newest version as the current
row before any batch run, and an older event delivered late does not overwrite it; the next
batch run finds every project unchanged (the event's version hashes as the walk's); a receiver
started after events were spooled (not applying) applies them when restarted; a scheduled run
while the receiver applies is never refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from drone_ops_sync.pipelines.run.lock import access_lock
from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import EXIT_OK, cli_env, run_cli, wait_until
from .listen_process import applying_listener as receiver
from .listen_process import post
from .spool_contents import read_spool

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WAIT_S = 300.0
"""How long a wait may take before it is a failure: several minutes, a bound for a stuck
receiver, not a pace. Each wait ends as soon as its condition holds; on a runner shared with
other work a receiver's start and each apply can take many seconds."""
SENDER_ARGS = ["--delivery-timeout", "60"]
"""The simulator's sender waits up to a minute for the receiver's answer (2 s by default): an
answer slowed by a busy machine is not a receiver that is down."""


def wait_for(check: Any, what: str, seen: Callable[[], object] | None = None) -> None:
    """Waits until `check()` holds, for up to WAIT_S; the failure says what was awaited and,
    with `seen`, what the test could see at the end (the receiver's health, the deliveries)."""
    if not wait_until(check, WAIT_S, interval=0.2):
        detail = f"; seen: {seen()}" if seen is not None else ""
        raise AssertionError(f"not within {WAIT_S:g} s: {what}{detail}")


def _api(sim: SimulatorHandle) -> httpx.Client:
    return httpx.Client(
        base_url=sim.base_url, headers={"Authorization": f"Bearer {sim.full_key}"}, timeout=60
    )


def test_events_land_within_seconds_and_the_batch_run_agrees(tmp_path: Path) -> None:
    with (
        running_simulator(seed=21, scale="tiny", admin=True, extra_args=SENDER_ARGS) as sim,
        _api(sim) as api,
    ):
        env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
        database = tmp_path / "w.duckdb"
        first = run_cli(["run", "--database", str(database), "--no-models"], env, tmp_path)
        assert first.code == EXIT_OK, first.describe()
        project_id = api.get("/v1/projects").json()["projects"][0]["id"]

        # spooled only: the receiver does not apply; a restart with applying catches up
        with receiver(tmp_path, env, 0, "spool-only") as (url, _):
            created = api.post(
                "/v1/webhooks",
                json={
                    "name": "receiver",
                    "url": f"{url}/events",
                    "event_types": ["project.created", "project.updated"],
                },
            )
            assert created.status_code == 201, created.text
            webhook_id = created.json()["id"]
            for number in range(5):
                api.patch(f"/v1/projects/{project_id}", json={"name": f"renamed {number}"})
            sim.wait_for_deliveries(timeout=WAIT_S)
            old_event = _first_spooled(tmp_path)
        assert _names(database, [project_id])[project_id] != "renamed 4"

        with receiver(tmp_path, env, 0.5, "applying") as (url, _):
            api.patch(f"/v1/webhooks/{webhook_id}", json={"url": f"{url}/events"})
            wait_for(
                lambda: _names(database, [project_id])[project_id] == "renamed 4",
                "the spooled events applied after the restart",
            )
            api.patch(f"/v1/projects/{project_id}", json={"name": "newest"})
            sim.wait_for_deliveries(timeout=WAIT_S)
            wait_for(
                lambda: _names(database, [project_id])[project_id] == "newest",
                "a live event applied",
            )
            # an old event delivered late (a retry) never overwrites the newer row
            late = dict(old_event, delivery_id="dlv_late_retry")
            with httpx.Client(timeout=60) as client:
                assert post(client, url, late, None).status_code == 202
            wait_for(
                lambda: _health(url)["applied"]["outcomes"].get("not_newer"),
                "the late event seen",
            )
            assert _names(database, [project_id])[project_id] == "newest"

            # a scheduled run while the receiver applies: never refused, and nothing to change
            second = run_cli(
                ["run", "--database", str(database), "--no-models", "--log-format", "json"],
                env,
                tmp_path,
            )
        assert second.code == EXIT_OK, second.describe()
        summary = json.loads(second.out.strip().splitlines()[-1])
        assert summary["tables"]["projects"]["changed"] == 0, summary["tables"]["projects"]
        assert summary["tables"]["projects"]["new"] == 0, summary["tables"]["projects"]


def _first_spooled(tmp_path: Path) -> dict[str, Any]:
    spool = tmp_path / ".drone_sync" / "w.duckdb" / "events"
    return dict(read_spool(spool).records[0]["event"])


def test_each_event_lands_in_its_own_workspace(tmp_path: Path) -> None:
    """Two workspaces deliver to one receiver: each event goes to the workspace whose synced
    delivery logs carry its `workspace_id`, never to the other's rows."""
    with (
        running_simulator(seed=31, scale="tiny", admin=True, extra_args=SENDER_ARGS) as home,
        running_simulator(seed=32, scale="tiny", admin=True, extra_args=SENDER_ARGS) as acme,
        _api(home) as home_api,
        _api(acme) as acme_api,
    ):
        env = cli_env(
            tmp_path,
            base_url=home.base_url,
            api_key=home.read_key,
            settings={
                "WORKSPACES": json.dumps({"acme": {"base_url": acme.base_url}}),
                "WORKSPACES__ACME__API_KEY": acme.read_key,
            },
        )
        database = tmp_path / "w.duckdb"
        first = run_cli(["run", "--database", str(database), "--no-models"], env, tmp_path)
        assert first.code == EXIT_OK, first.describe()
        with receiver(tmp_path, env, 0.5, "fleet") as (url, _):
            changed = {}
            for name, api in (("default", home_api), ("acme", acme_api)):
                hook = {"name": "r", "url": f"{url}/events", "event_types": ["project.updated"]}
                assert api.post("/v1/webhooks", json=hook).status_code == 201
                project_id = api.get("/v1/projects").json()["projects"][0]["id"]
                api.patch(f"/v1/projects/{project_id}", json={"name": f"from {name}"})
                changed[name] = project_id
            home.wait_for_deliveries(timeout=WAIT_S)
            acme.wait_for_deliveries(timeout=WAIT_S)
            for name, project_id in changed.items():
                dataset = "drone_ops" if name == "default" else f"drone_ops_{name}"
                wait_for(
                    lambda d=dataset, p=project_id, n=name: (
                        _names(database, [p], d).get(p) == f"from {n}"
                    ),
                    f"{name}'s event in {dataset}",
                )
        for dataset in ("drone_ops", "drone_ops_acme"):
            with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
                names = con.execute(
                    f"SELECT name FROM {dataset}.projects WHERE name LIKE 'from %'"
                    " AND _dlt_valid_to IS NULL"
                ).fetchall()
            assert len(names) == 1, (dataset, names)


SECRET = "whsec_ZTJlLXNlY3JldC1rZXktMDEyMzQ1Njc4OWFiYw=="
FAULTS = "duplicate:0.3,reorder:0.3,delay:0.2:300"
QUICK_RETRIES = "0.3,0.6,1.2"
"""Retries that run out within seconds, for the event lost while the receiver is down."""
PATIENT_RETRIES = "0.3,0.6,1.2,2.4,4.8,9.6,19.2,38.4,76.8,153.6"
"""Retries over five minutes, for the receiver that is down briefly: its restart (a Python
process importing dlt) takes seconds on a busy machine, longer than the quick schedule's 2 s."""


def test_signed_faulty_deliveries_leave_the_newest_state_and_the_run_agrees(
    tmp_path: Path,
) -> None:
    """Signed deliveries with duplicates, reordering, delays and retries, and a receiver that is
    down for a while: before any batch run the warehouse holds each project's newest state;
    after it, exactly the API's; an event whose retries ran out while the receiver was down is
    counted in the gap report."""
    sender = ["--webhook-secret", SECRET, "--delivery-retry-delays", QUICK_RETRIES, *SENDER_ARGS]
    with (
        running_simulator(seed=41, scale="tiny", admin=True, extra_args=sender) as sim,
        _api(sim) as api,
    ):
        env = cli_env(
            tmp_path,
            base_url=sim.base_url,
            api_key=sim.read_key,
            settings={"WEBHOOK_SECRET": SECRET},
        )
        database = tmp_path / "w.duckdb"
        first = run_cli(["run", "--database", str(database), "--no-models"], env, tmp_path)
        assert first.code == EXIT_OK, first.describe()
        ids = [project["id"] for project in api.get("/v1/projects").json()["projects"]][:4]
        sim.set_delivery_faults(FAULTS)
        with receiver(tmp_path, env, 0.5, "signed") as (url, _):
            port = int(url.rsplit(":", 1)[1])
            hook = {"name": "r", "url": f"{url}/events", "event_types": ["project.updated"]}
            assert api.post("/v1/webhooks", json=hook).status_code == 201
            for round_number in range(6):
                for project_id in ids:
                    api.patch(f"/v1/projects/{project_id}", json={"name": f"v{round_number}"})
            sim.wait_for_deliveries(timeout=WAIT_S)
            wait_for(
                lambda: _names(database, ids) == {p: "v5" for p in ids},
                "newest state",
                lambda: (_names(database, ids), _health(url)),
            )
            health = _health(url)
            assert health["refused"] == 0, health
            assert health["duplicates"] > 0 or health["applied"]["outcomes"].get("not_newer")

        # the receiver is down past the retries: the event is lost to it, the log shows it
        sim.set_delivery_faults(None)
        api.patch(f"/v1/projects/{ids[0]}", json={"name": "while down"})
        sim.wait_for_deliveries(timeout=WAIT_S)
        failed = [d for d in sim.deliveries() if d["status"] == "failed"]
        assert failed, "the delivery to a receiver that is down should have run out of retries"

        # down briefly: the retries reach it once it is back on the same port
        sim.set_delivery_retry_delays(PATIENT_RETRIES)
        api.patch(f"/v1/projects/{ids[1]}", json={"name": "after restart"})
        wait_for(
            lambda: _attempts(sim, ids[1])[-1:] == ["Transport error: ConnectError"],
            "the first attempt refused while the receiver is down",
            lambda: _latest_delivery(sim, ids[1]),
        )
        with receiver(tmp_path, env, 0.5, "back", port=port) as (back_url, _):
            wait_for(
                lambda: _names(database, ids)[ids[1]] == "after restart",
                "a retried event",
                lambda: (_latest_delivery(sim, ids[1]), _health(back_url)),
            )
            sim.wait_for_deliveries(timeout=WAIT_S)
        *refused, delivered = _attempts(sim, ids[1])
        assert delivered is None and refused, _latest_delivery(sim, ids[1])
        assert set(refused) == {"Transport error: ConnectError"}, _latest_delivery(sim, ids[1])
        assert _names(database, ids)[ids[0]] == "v5", "nothing applied the lost event"

        second = run_cli(
            ["run", "--database", str(database), "--log-format", "json"], env, tmp_path
        )
        assert second.code == EXIT_OK, second.describe()
        api_names = {p: api.get(f"/v1/projects/{p}").json()["name"] for p in ids}
        assert _names(database, ids) == api_names
        with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
            missed = con.execute(
                "SELECT sum(events_missed) FROM drone_ops_marts.fct_webhook_event_gaps"
            ).fetchone()
        assert missed is not None and missed[0] >= 1, missed


def _health(url: str) -> dict[str, Any]:
    """The receiver's /health (a minute to answer: it may be busy applying on a busy machine)."""
    return dict(httpx.get(f"{url}/health", timeout=60).json())


def _latest_delivery(sim: SimulatorHandle, project_id: str) -> dict[str, Any]:
    """The newest delivery of this project's events, as the simulator's journal has it."""
    return [d for d in sim.deliveries() if d["project_id"] == project_id][-1]


def _attempts(sim: SimulatorHandle, project_id: str) -> list[str | None]:
    """The error of each attempt of the project's newest delivery so far (None: answered)."""
    return [attempt["error"] for attempt in _latest_delivery(sim, project_id)["attempts"]]


def _names(database: Path, ids: list[str], dataset: str = "drone_ops") -> dict[str, str]:
    """The current names of these projects, read as the sync's own steps read the file (under
    its access lock)."""
    with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(
            f"SELECT id, name FROM {dataset}.projects WHERE _dlt_valid_to IS NULL"
        ).fetchall()
    return {str(pid): str(name) for pid, name in rows if pid in ids}
