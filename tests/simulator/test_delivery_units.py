"""The sender's parts without HTTP: the delivery schedule (lanes, retries, held events), the
fault spec and its draws, retry delays, and the secrets that sign a webhook."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time

import pytest

from drone_ops_sync.simulator.delivery_faults import DeliveryFaultInjector, parse_delivery_faults
from drone_ops_sync.simulator.delivery_journal import DeliveryJournal
from drone_ops_sync.simulator.delivery_queue import Delivery, DeliveryQueue
from drone_ops_sync.simulator.events import DeliveryOptions, parse_retry_delays
from drone_ops_sync.simulator.server import ServeConfig, build_runtime
from drone_ops_sync.simulator.signing import WebhookSecrets, sign_all

# Standard Webhooks secrets: `whsec_` and the base64 of the key bytes
S1, K1 = "whsec_c2VjcmV0LWtleS1vbmUtMDEyMzQ1Njc4OWFi", b"secret-key-one-0123456789ab"
S2, K2 = "whsec_c2VjcmV0LWtleS10d28tMDEyMzQ1Njc4OWFi", b"secret-key-two-0123456789ab"


def delivery(name: str, lane: object = "L", project: str = "p", copy: int = 1) -> Delivery:
    return Delivery(name, "wh", "http://127.0.0.1:1/", "project.updated", "{}", project, lane, copy)


def test_a_lane_sends_one_delivery_at_a_time_in_order() -> None:
    q = DeliveryQueue()
    a, b, c = delivery("a"), delivery("b"), delivery("c", lane="other")
    now = time.monotonic()
    for d in (a, b, c):
        q.put(d, now)
    assert {q.take(0), q.take(0)} == {a, c}
    assert q.take(0) is None  # b waits for a to settle
    # a keeps its lane while it waits to retry (a second: the next line must come before it is
    # due, however late a busy machine runs it)
    q.retry(a, time.monotonic() + 1.0)
    assert q.take(0) is None
    assert q.take(30) is a
    q.done(a)
    assert q.take(0) is b
    assert q.pending == 2
    q.done(b)
    q.done(c)
    assert q.wait(0) == 0


def test_a_held_delivery_goes_right_after_the_one_that_passes_it() -> None:
    q = DeliveryQueue()
    first, second, third = delivery("1"), delivery("2"), delivery("3")
    now = time.monotonic()
    q.hold(first, 1, 10, now)
    q.put(second, now)
    q.put(third, now)
    assert q.pending == 3
    assert q.take(0) is second
    q.done(second)
    assert q.take(0) is first  # before third, which queued while second was in flight
    q.done(first)
    assert q.take(0) is third


def test_a_held_delivery_is_sent_anyway_after_its_longest_hold() -> None:
    q = DeliveryQueue()
    lonely = delivery("x")
    q.hold(lonely, 1, 1.0, time.monotonic())  # held a second: the next line comes before that
    assert q.take(0) is None
    assert q.take(30) is lonely


def test_a_delayed_delivery_waits_and_stop_wakes_takers() -> None:
    q = DeliveryQueue()
    q.put(delivery("d"), time.monotonic() + 0.1)
    started = time.monotonic()
    assert q.take(30) is not None and time.monotonic() - started >= 0.09
    q.stop()
    assert q.take(5) is None


def test_an_idle_taker_sleeps_until_a_delivery_or_stop_wakes_it() -> None:
    """A sender with nothing to send waits once, without a timeout: it never polls."""
    q = DeliveryQueue()
    waits: list[float | None] = []
    wait = q._cond.wait

    def counted(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return wait(timeout)

    q._cond.wait = counted  # type: ignore[method-assign]
    taken: list[Delivery | None] = []
    takers = [threading.Thread(target=lambda: taken.append(q.take())) for _ in range(2)]
    for t in takers:
        t.start()
    deadline = time.monotonic() + 10
    while len(waits) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    assert waits == [None, None]
    a = delivery("a")
    q.put(a, time.monotonic())
    while not taken and time.monotonic() < deadline:
        time.sleep(0.01)
    assert taken == [a]
    q.stop()
    for t in takers:
        t.join(5)
    assert taken == [a, None]


def test_journal_status_follows_copies_and_attempts() -> None:
    j = DeliveryJournal(capacity=2)
    one, copy = delivery("one"), delivery("one", copy=2)
    j.opened(one, ["duplicate"], copies=2)
    j.attempted(one, {"outcome": "failed"})
    j.settled(one)
    assert j.snapshot()[0]["status"] == "pending"  # the copy is still open
    j.attempted(copy, {"outcome": "success"})
    j.settled(copy)
    assert j.snapshot()[0]["status"] == "delivered"
    for name in ("two", "three"):
        j.opened(delivery(name), [], copies=1)
    assert [r["delivery_id"] for r in j.snapshot()] == ["two", "three"]  # bounded
    j.settled(delivery("two"))
    assert j.snapshot()[0]["status"] == "failed"
    assert j.clear() == 1 and [r["delivery_id"] for r in j.snapshot()] == ["three"]


def test_fault_spec_parses_probabilities_counts_and_params() -> None:
    faults = parse_delivery_faults("duplicate:0.5, reorder:2x:3,delay:1x,drop_first_attempt:1")
    assert [(f.kind, f.probability, f.remaining, f.param) for f in faults] == [
        ("duplicate", 0.5, None, None),
        ("reorder", None, 2, 3),
        ("delay", None, 1, 500),
        ("drop_first_attempt", 1.0, None, None),
    ]
    assert parse_delivery_faults(" ") == []


@pytest.mark.parametrize(
    "spec",
    ["explode:1", "duplicate", "duplicate:1.5", "duplicate:0x", "duplicate:1:2", "delay:1:0",
     "reorder:1:x", "delay:1,delay:1", "delay:1:2:3"],
)  # fmt: skip
def test_bad_fault_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_delivery_faults(spec)


def test_counts_are_spent_and_kinds_drawn_apart() -> None:
    injector = DeliveryFaultInjector(1, "duplicate:2x,delay:1:250,reorder:0")
    draws = [injector.draw() for _ in range(3)]
    assert [d.duplicate for d in draws] == [True, True, False]
    assert {d.delay_ms for d in draws} == {250} and not any(d.reorder_passes for d in draws)
    assert draws[0].labels() == ["delay:250", "duplicate"]
    assert injector.state()[0]["remaining"] == 0
    injector.set(None)
    assert not injector.draw().labels() and injector.spec is None


def test_retry_delays() -> None:
    assert parse_retry_delays("0.2,0.5,1,2") == (0.2, 0.5, 1.0, 2.0)
    assert parse_retry_delays("") == ()
    for bad in ("1,,2", "-1", "x", ",".join(["1"] * 21)):
        with pytest.raises(ValueError):
            parse_retry_delays(bad)


def test_secrets_default_override_and_rotation() -> None:
    secrets = WebhookSecrets([S1])
    assert secrets.for_webhook("wh_a") == (S1,)
    assert secrets.set([S2, S1], "wh_a") == 2
    assert secrets.for_webhook("wh_a") == (S2, S1) and secrets.for_webhook("wh_b") == (S1,)
    secrets.set(None, "wh_a")
    assert secrets.for_webhook("wh_a") == (S1,)
    secrets.set([])
    assert secrets.for_webhook("wh_a") == ()
    for refused in ([""], ["s1"], ["whsec_local"], [S1, "whsec_"]):
        with pytest.raises(ValueError):
            secrets.set(refused)
    assert secrets.for_webhook("wh_a") == ()


def test_sign_all_carries_one_signature_per_secret() -> None:
    headers = sign_all([S1, S2], "dlv_1", b'{"a":1}', timestamp=1700000000)
    expected = [
        "v1,"
        + base64.b64encode(
            hmac.new(k, b'dlv_1.1700000000.{"a":1}', hashlib.sha256).digest()
        ).decode()
        for k in (K1, K2)
    ]
    assert headers["webhook-signature"].split(" ") == expected
    assert headers["webhook-id"] == "dlv_1" and headers["webhook-timestamp"] == "1700000000"


@pytest.mark.parametrize(
    "options",
    [
        DeliveryOptions(secrets=("",)),
        DeliveryOptions(secrets=("whsec_local",)),
        DeliveryOptions(workers=0),
        DeliveryOptions(timeout=0),
        DeliveryOptions(order="random"),
        DeliveryOptions(faults="nope:1"),
    ],
)
def test_bad_delivery_options_stop_the_start(options: DeliveryOptions) -> None:
    with pytest.raises(ValueError):
        build_runtime(ServeConfig(delivery=options))
