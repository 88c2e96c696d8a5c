"""Retries, a receiver that is down, and the pace the sender keeps: what the receiver gets,
what the API's delivery log shows, and what the admin journal says of every attempt."""

from __future__ import annotations

import time
from collections import defaultdict

import httpx
import pytest

from testkit.simulator_process import SimulatorHandle

from .conftest import RETRY_DELAYS, SECRET
from .helpers import new_project, rename, webhook_to
from .webhook_receiver import WebhookReceiver, free_port, signature_matches

pytestmark = pytest.mark.e2e

ATTEMPTS = 1 + len(RETRY_DELAYS)


def failed_log_entries(api: httpx.Client, hook: str) -> list[dict[str, object]]:
    body = api.get(f"/v1/webhooks/{hook}").json()
    assert body["cursor"] is None  # one page holds them all here
    return [e for e in body["logs"] if e["status"] == "failed"]


def test_receiver_down_for_a_second_gets_every_event_after_retries(
    signed_sim: SimulatorHandle, signed_api: httpx.Client
) -> None:
    receiver = WebhookReceiver(port=free_port())  # not listening yet: connections are refused
    try:
        with webhook_to(signed_sim, signed_api, receiver.url) as hook:
            p1, p2 = new_project(signed_api), new_project(signed_api)
            for pid, name in ((p1, "A1"), (p1, "A2"), (p2, "B1")):
                rename(signed_api, pid, name)
            time.sleep(1.0)
            receiver.start()
            signed_sim.wait_for_deliveries()
            arrivals = receiver.arrivals
            deliveries = signed_sim.deliveries(hook)
            failed = failed_log_entries(signed_api, hook)
    finally:
        receiver.stop()

    assert sorted(receiver.delivery_ids()) == sorted(d["delivery_id"] for d in deliveries)
    assert [a.event["data"]["name"] for a in arrivals if a.event["data"]["id"] == p1] == [
        "A1",
        "A2",
    ]
    assert all(signature_matches(SECRET, a.headers, a.body) for a in arrivals)
    name_of = {a.event["delivery_id"]: a.event["data"]["name"] for a in arrivals}
    attempts = {name_of[d["delivery_id"]]: d["attempts"] for d in deliveries}
    for d in deliveries:
        *before, last = d["attempts"]
        assert d["status"] == "delivered" and last["outcome"] == "success"
        assert all(a["outcome"] == "failed" and a["response_status"] == 0 for a in before)
        assert all(a["error"] == "Transport error: ConnectError" for a in before)
    # A1 and B1 were tried while the receiver was down; A2 waited behind A1 (project order)
    assert len(attempts["A1"]) >= 2 and len(attempts["B1"]) >= 2 and len(attempts["A2"]) == 1
    assert len(failed) == sum(len(a) - 1 for a in attempts.values())
    assert {e["error_message"] for e in failed} == {"Transport error: ConnectError"}


def test_receiver_down_past_the_schedule_leaves_failed_entries_and_no_delivery(
    signed_sim: SimulatorHandle, signed_api: httpx.Client
) -> None:
    receiver = WebhookReceiver(port=free_port())
    try:
        with webhook_to(signed_sim, signed_api, receiver.url) as hook:
            for _ in range(2):  # two projects: their retries run side by side
                rename(signed_api, new_project(signed_api), "Never received")
            signed_sim.wait_for_deliveries()
            receiver.start()  # back too late: nothing is sent again
            time.sleep(0.3)
            deliveries = signed_sim.deliveries(hook)
            body = signed_api.get(f"/v1/webhooks/{hook}").json()
    finally:
        receiver.stop()

    assert receiver.arrivals == []
    assert [d["status"] for d in deliveries] == ["failed", "failed"]
    for d in deliveries:
        assert [a["attempt"] for a in d["attempts"]] == list(range(1, ATTEMPTS + 1))
        assert {a["outcome"] for a in d["attempts"]} == {"failed"}
        gaps = [b["at"] - a["at"] for a, b in zip(d["attempts"], d["attempts"][1:], strict=False)]
        assert all(gap >= delay * 1000 - 5 for gap, delay in zip(gaps, RETRY_DELAYS, strict=True))
    assert body["log_count"] == 2 * ATTEMPTS
    assert body["webhook"]["failure_count"] == 2 * ATTEMPTS
    assert {e["status"] for e in body["logs"]} == {"failed"}


def test_sender_keeps_up_with_fifty_events_a_second(
    signed_sim: SimulatorHandle, signed_api: httpx.Client
) -> None:
    """100 events at 50/s to a receiver that takes 50 ms each: one sender thread would need
    5 s and fall 3 s behind; the pool keeps up, and each project's events stay in order."""
    receiver = WebhookReceiver(latency_s=0.05).start()
    try:
        with webhook_to(signed_sim, signed_api, receiver.url) as hook:
            projects = [new_project(signed_api) for _ in range(5)]
            started = time.monotonic()
            for i in range(100):
                time.sleep(max(0.0, started + i * 0.02 - time.monotonic()))
                rename(signed_api, projects[i % 5], f"v{i}")
            last_emitted = time.monotonic()
            signed_sim.wait_for_deliveries()
            arrivals = receiver.arrivals
            statuses = {d["status"] for d in signed_sim.deliveries(hook)}
    finally:
        receiver.stop()

    assert len({a.event["delivery_id"] for a in arrivals}) == len(arrivals) == 100
    assert statuses == {"delivered"}
    lag = max(a.at for a in arrivals) - last_emitted
    assert lag < 1.5, f"the sender fell {lag:.2f} s behind"
    names: dict[str, list[int]] = defaultdict(list)
    for a in arrivals:
        names[a.event["data"]["id"]].append(int(a.event["data"]["name"][1:]))
    assert all(seq == sorted(seq) for seq in names.values())


def test_the_retry_schedule_can_be_replaced_at_run_time(
    signed_sim: SimulatorHandle, signed_api: httpx.Client
) -> None:
    """`PUT /_admin/delivery-retries`: the next failures follow the new schedule (here one
    retry, then the delivery fails); a bad schedule is refused and changes nothing."""
    receiver = WebhookReceiver(port=free_port())  # never listening: every attempt is refused
    try:
        assert signed_sim.set_delivery_retry_delays("0.4") == [0.4]
        with webhook_to(signed_sim, signed_api, receiver.url) as hook:
            rename(signed_api, new_project(signed_api), "One retry")
            signed_sim.wait_for_deliveries()
            (delivery,) = signed_sim.deliveries(hook)
        with signed_sim.client(full=True) as c:
            r = c.put("/_admin/delivery-retries", json={"delays": "soon"})
            assert r.status_code == 400 and "soon" in r.json()["message"]
            assert c.get("/_admin/delivery-retries").json() == {"delays": [0.4]}
    finally:
        signed_sim.set_delivery_retry_delays(",".join(map(str, RETRY_DELAYS)))
    assert signed_sim.set_delivery_retry_delays(None) == []
    assert signed_sim.set_delivery_retry_delays(",".join(map(str, RETRY_DELAYS))) == list(
        RETRY_DELAYS
    )
    assert delivery["status"] == "failed"
    first, second = delivery["attempts"]
    assert (first["outcome"], second["outcome"]) == ("failed", "failed")
    assert second["at"] - first["at"] >= 400
