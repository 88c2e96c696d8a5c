"""The simulator as a webhook sender, seen from a real receiver on 127.0.0.1: signatures that
verify by an independent HMAC and by the official `standardwebhooks` library, the event's
`data`, and each delivery fault on demand."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import orjson
import pytest
from standardwebhooks import Webhook

from drone_ops_sync.simulator.events import DeliveryOptions
from drone_ops_sync.simulator.server import serve_in_thread
from testkit.simulator_process import SimulatorHandle, running_simulator

from .conftest import ANCHOR, SECRET
from .helpers import new_project, rename, webhook_to
from .webhook_receiver import WebhookReceiver, signature_matches

pytestmark = pytest.mark.e2e

NEW_SECRET = "whsec_cm90YXRlZC1uZXcta2V5LTAxMjM0NTY3ODlhYg=="
LATER_SECRET = "whsec_bGF0ZXItc2VjcmV0LWtleS0wMTIzNDU2Nzg5YQ=="


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    r = WebhookReceiver().start()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture
def api(signed_api: httpx.Client) -> httpx.Client:
    return signed_api


@pytest.fixture
def hook(
    signed_sim: SimulatorHandle, signed_api: httpx.Client, receiver: WebhookReceiver
) -> Iterator[str]:
    with webhook_to(signed_sim, signed_api, receiver.url) as hook_id:
        yield hook_id


def test_patch_sends_a_signed_update_carrying_the_project_as_served(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    pid = new_project(api)
    rename(api, pid, "Signed and delivered")
    signed_sim.wait_for_deliveries(timeout=10)

    (arrival,) = receiver.arrivals
    headers, event = arrival.headers, arrival.event
    assert signature_matches(SECRET, headers, arrival.body)
    assert not signature_matches(NEW_SECRET, headers, arrival.body)
    assert Webhook(SECRET).verify(arrival.body, headers) == event
    assert headers["webhook-id"] == event["delivery_id"]
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 60
    assert headers["content-type"] == "application/json"
    assert set(event) == {"delivery_id", "event", "timestamp", "workspace_id", "data"}
    assert event["event"] == "project.updated"
    assert event["data"] == api.get(f"/v1/projects/{pid}").json()

    logs = api.get(f"/v1/webhooks/{hook}").json()["logs"]
    assert [(e["status"], e["response_status"]) for e in logs] == [("success", 202)]
    assert logs[0]["request_payload"].encode() == arrival.body
    (delivery,) = signed_sim.deliveries(hook)
    assert delivery["delivery_id"] == event["delivery_id"] and delivery["status"] == "delivered"
    assert [(a["attempt"], a["outcome"], a["log_id"]) for a in delivery["attempts"]] == [
        (1, "success", logs[0]["id"])
    ]


def test_rotation_signs_with_both_secrets(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    signed_sim.set_webhook_secrets([NEW_SECRET, SECRET], webhook_id=hook)
    try:
        rename(api, new_project(api), "Rotating")
        signed_sim.wait_for_deliveries(timeout=10)
    finally:
        signed_sim.set_webhook_secrets(None, webhook_id=hook)
    (arrival,) = receiver.arrivals
    assert len(arrival.headers["webhook-signature"].split(" ")) == 2
    for secret in (NEW_SECRET, SECRET):
        assert signature_matches(secret, arrival.headers, arrival.body)
        Webhook(secret).verify(arrival.body, arrival.headers)
    rename(api, new_project(api), "Rotated back")
    signed_sim.wait_for_deliveries(timeout=10)
    assert len(receiver.arrivals[-1].headers["webhook-signature"].split(" ")) == 1


def test_duplicate_arrives_twice_with_one_delivery_id(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    state = signed_sim.set_delivery_faults("duplicate:1x")
    assert state["active"] == [
        {"kind": "duplicate", "probability": None, "remaining": 1, "param": None}
    ]
    pid = new_project(api)
    rename(api, pid, "Twice")
    rename(api, pid, "Once")  # the count is spent: this one is sent once
    signed_sim.wait_for_deliveries(timeout=10)

    ids = receiver.delivery_ids()
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2]
    assert receiver.arrivals[0].body == receiver.arrivals[1].body
    assert signed_sim.delivery_faults()["active"][0]["remaining"] == 0
    first, second = signed_sim.deliveries(hook)
    assert first["faults"] == ["duplicate"] and second["faults"] == []
    assert [a["copy"] for a in first["attempts"]] == [1, 2]
    assert api.get(f"/v1/webhooks/{hook}").json()["log_count"] == 3


def test_reordered_event_arrives_after_the_next_of_its_project(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    signed_sim.set_delivery_faults("reorder:1x")
    pid = new_project(api)
    for name in ("First", "Second", "Third"):
        rename(api, pid, name)
    signed_sim.wait_for_deliveries(timeout=10)

    assert [a.event["data"]["name"] for a in receiver.arrivals] == ["Second", "First", "Third"]
    sent = [d["delivery_id"] for d in signed_sim.deliveries(hook)]
    assert receiver.delivery_ids() == [sent[1], sent[0], sent[2]]
    assert signed_sim.deliveries(hook)[0]["faults"] == ["reorder:1"]


def test_delay_holds_a_delivery_for_the_given_time(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    signed_sim.set_delivery_faults("delay:1x:400")
    before = time.monotonic()
    rename(api, new_project(api), "Late")
    signed_sim.wait_for_deliveries(timeout=10)
    (arrival,) = receiver.arrivals
    assert arrival.at - before >= 0.4
    assert signed_sim.deliveries(hook)[0]["faults"] == ["delay:400"]


def test_dropped_first_attempt_is_logged_as_a_timeout_then_retried(
    signed_sim: SimulatorHandle, api: httpx.Client, receiver: WebhookReceiver, hook: str
) -> None:
    signed_sim.set_delivery_faults("drop_first_attempt:1x")
    rename(api, new_project(api), "Lost once")
    signed_sim.wait_for_deliveries(timeout=10)

    assert len(receiver.arrivals) == 1
    (delivery,) = signed_sim.deliveries(hook)
    outcomes = [(a["attempt"], a["sent"], a["outcome"]) for a in delivery["attempts"]]
    assert outcomes == [(1, False, "dropped"), (2, True, "success")]
    body = api.get(f"/v1/webhooks/{hook}").json()
    assert body["webhook"]["failure_count"] == 1
    newest, oldest = body["logs"]
    assert (oldest["status"], oldest["response_status"]) == ("failed", 0)
    assert oldest["error_message"] == "Timed out after 1000 ms"
    assert newest["status"] == "success"
    assert oldest["request_payload"] == newest["request_payload"]


def test_bad_admin_input_is_refused(signed_sim: SimulatorHandle) -> None:
    with signed_sim.client(full=True) as c:
        r = c.put("/_admin/delivery-faults", json={"faults": "explode:1"})
        assert r.status_code == 400 and "explode" in r.json()["message"]
        r = c.put("/_admin/webhook-secret", json={"secrets": [""]})
        assert r.status_code == 400
        r = c.put("/_admin/webhook-secret", json={"secrets": ["whsec_local"]})
        assert r.status_code == 400 and "Standard Webhooks" in r.json()["message"]
        assert "whsec_local" not in r.text
        r = c.put("/_admin/webhook-secret", json={"secrets": ["x"], "webhook_id": "wh_none"})
        assert r.status_code == 404
        assert c.get("/_admin/delivery-faults").json() == {"faults": None, "active": []}


def test_unsigned_without_a_secret() -> None:
    args = ["--anchor-date", ANCHOR, "--webhooks", "0"]
    receiver = WebhookReceiver().start()
    try:
        with running_simulator(seed=12, extra_args=args) as sim, sim.client() as api:
            api.post(
                "/v1/webhooks",
                json={"name": "u", "url": receiver.url, "event_types": ["project.created"]},
            )
            api.post("/v1/projects", json={"name": "U", "description": "d", "start_date": ANCHOR})
            sim.wait_for_deliveries(timeout=10)
            sim.set_webhook_secrets([LATER_SECRET])
            api.post("/v1/projects", json={"name": "S", "description": "d", "start_date": ANCHOR})
            sim.wait_for_deliveries(timeout=10)
    finally:
        receiver.stop()
    unsigned, signed = receiver.arrivals
    assert not any(h.startswith("webhook-") for h in unsigned.headers)
    assert orjson.loads(unsigned.body)["event"] == "project.created"
    assert signature_matches(LATER_SECRET, signed.headers, signed.body)
    Webhook(LATER_SECRET).verify(signed.body, signed.headers)


def test_in_process_simulator_has_the_same_controls() -> None:
    """`serve_in_thread` (the demo's host) takes the same delivery options and its handle the
    same admin methods as the subprocess handle."""
    options = DeliveryOptions(secrets=(SECRET,), faults="duplicate:1x")
    receiver = WebhookReceiver().start()
    try:
        with (
            serve_in_thread(counts={"webhooks": 0}, delivery=options) as sim,
            sim.client() as api,
            webhook_to(sim, api, receiver.url) as hook,
        ):
            rename(api, new_project(api), "In process")
            sim.wait_for_deliveries(timeout=10)
            assert sim.delivery_faults()["active"][0]["remaining"] == 0
            (delivery,) = sim.deliveries(hook)
            assert sim.reset_deliveries() == 1 and sim.deliveries() == []
    finally:
        receiver.stop()
    first, second = receiver.arrivals
    assert first.body == second.body and delivery["status"] == "delivered"
    assert signature_matches(SECRET, first.headers, first.body)
