"""Webhook delivery: project events sent off the request path the way a real vendor's sender
does it, so a receiver can be tested against the simulator alone.

Each event becomes one delivery per subscribed webhook, with its own `delivery_id`. A small
pool of sender threads attempts deliveries (`delivery_queue.py` decides when: order lanes,
backoff, delays, held events); every attempt, failed or not, is one entry of the webhook's
delivery log (spec 2.6) and one attempt in the admin journal (`delivery_journal.py`). A failed
attempt (non-2xx, timeout, transport error) is retried after the configured delays, with the
same `delivery_id` and body, signed afresh (`signing.py`) when the webhook has a secret.

Real HTTP is sent only to loopback receivers; any other host is simulated deterministically so
the simulator never opens a connection off the machine. Delivery faults (`delivery_faults.py`)
apply to loopback receivers only: they exist to test a real receiver, and the generated
webhooks' remote receivers keep their fixed outcome mix.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import itertools
import logging
import random
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .delivery_faults import NONE, DeliveryFaultInjector, Drawn
from .delivery_journal import DROPPED, FAILURE, SUCCESS, DeliveryJournal
from .delivery_queue import Delivery, DeliveryQueue
from .signing import WebhookSecrets, sign_all
from .store import Store
from .store.state import now_ms

log = logging.getLogger(__name__)

DELIVERY_TIMEOUT_S = 2.0
DEFAULT_WORKERS = 4
MAX_WORKERS = 64
# an event held back by `reorder` is sent anyway this long after, if no later event came
REORDER_MAX_HOLD_S = 3.0
MAX_RETRIES = 20
MAX_TIMEOUT_S = 60.0
MAX_RETRY_DELAY_S = 3600.0
USER_AGENT = "drone-ops-simulator/1"

ORDER_PROJECT, ORDER_WEBHOOK, ORDER_NONE = "project", "webhook", "none"
ORDERS = (ORDER_PROJECT, ORDER_WEBHOOK, ORDER_NONE)


def is_loopback(url: str) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_retry_delays(text: str | None) -> tuple[float, ...]:
    """`0.2,0.5,1,2` (seconds before the 2nd, 3rd, ... attempt); empty means no retry."""
    if text is None or not text.strip():
        return ()
    try:
        delays = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"bad retry delays {text!r}; expected seconds like 0.2,0.5,1") from None
    if len(delays) > MAX_RETRIES:
        raise ValueError(f"at most {MAX_RETRIES} retry delays")
    if any(not 0.0 <= d <= MAX_RETRY_DELAY_S for d in delays):
        raise ValueError(f"retry delays must lie in [0, {MAX_RETRY_DELAY_S:g}] seconds")
    return delays


@dataclass
class DeliveryOptions:
    """How the sender behaves; the defaults are the simulator's behaviour before retries,
    signing and faults existed (one attempt, unsigned), sent by a small pool in project order."""

    retry_delays: tuple[float, ...] = ()
    timeout: float = DELIVERY_TIMEOUT_S
    workers: int = DEFAULT_WORKERS
    order: str = ORDER_PROJECT
    faults: str | None = None
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to, as the delivery log records it."""

    status: int
    body: str
    error: str | None
    duration_ms: int
    sent: bool = True

    @property
    def ok(self) -> bool:
        return self.error is None and 200 <= self.status < 300


class DeliveryWorker:
    """Sender threads over a `DeliveryQueue`; `wait()` blocks until every delivery is settled."""

    def __init__(self, store: Store, seed: int, options: DeliveryOptions | None = None) -> None:
        self.store = store
        self.options = options = options or DeliveryOptions()
        if options.order not in ORDERS:
            raise ValueError(f"delivery order must be one of {ORDERS}")
        if not 1 <= options.workers <= MAX_WORKERS:
            raise ValueError(f"delivery workers must lie in [1, {MAX_WORKERS}]")
        if not 0 < options.timeout <= MAX_TIMEOUT_S:
            raise ValueError(f"delivery timeout must lie in (0, {MAX_TIMEOUT_S:g}] seconds")
        self.timeout = options.timeout
        self.queue = DeliveryQueue()
        self.journal = DeliveryJournal()
        self.faults = DeliveryFaultInjector(seed, options.faults)
        self.secrets = WebhookSecrets(options.secrets)
        self._rng = random.Random(f"{seed}:deliveries")
        self._rng_lock = threading.Lock()
        self._lane_ids = itertools.count()
        self._stopping = threading.Event()
        self._started = False
        self._threads: list[threading.Thread] = []
        self._client: httpx.Client | None = None
        self._lazy_lock = threading.Lock()
        """Guards the senders and the client, each made once, on first use."""
        store.state.on_event = self.submit

    def start(self) -> None:
        """Let the senders run. Their threads are started with the first delivery, and the HTTP
        client with the first attempt to a loopback receiver: a server of hundreds of
        workspaces, most of which never send anything, would otherwise hold each one's threads
        and a client with its own TLS context (the system's certificates, loaded per client)."""
        self._started = True
        if self.queue.pending:
            self._start_senders()

    def _start_senders(self) -> None:
        """The sender threads, started once, on the first delivery after `start`."""
        with self._lazy_lock:
            if self._threads or not self._started or self._stopping.is_set():
                return
            self._threads = [
                threading.Thread(target=self._run, name=f"webhook-delivery-{i}", daemon=True)
                for i in range(self.options.workers)
            ]
            for thread in self._threads:
                thread.start()

    def _http(self) -> httpx.Client:
        with self._lazy_lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout, trust_env=False)
            return self._client

    def stop(self) -> None:
        """Stop the senders (what is still queued is abandoned), bounded by the timeout."""
        with self._lazy_lock:
            self._stopping.set()
            threads = list(self._threads)
        self.queue.stop()
        deadline = time.monotonic() + self.timeout + 3
        for thread in threads:
            if thread.is_alive():
                thread.join(timeout=max(deadline - time.monotonic(), 0.1))
        with self._lazy_lock:
            if self._client is not None:
                self._client.close()

    def set_retry_delays(self, delays: tuple[float, ...]) -> None:
        """Replace the retry schedule: each attempt that fails from now on (of a delivery already
        retrying too) is retried after the new schedule's delay for its attempt number, or is
        the last; a retry already scheduled keeps its time."""
        self.options = dataclasses.replace(self.options, retry_delays=delays)

    @property
    def pending(self) -> int:
        return self.queue.pending

    def wait(self, timeout: float) -> int:
        """Block until nothing is pending or the timeout passes; returns what is still pending."""
        return self.queue.wait(timeout)

    def deliveries(self, webhook_id: str | None = None) -> list[dict[str, Any]]:
        return self.journal.snapshot(webhook_id)

    def submit(self, event: str, project: dict[str, Any]) -> None:
        """Called by the store (under its lock) when a project event happens: one delivery per
        subscribed webhook, faults drawn now so the draws follow the order of requests."""
        log_ = self.store.delivery_log
        now = time.monotonic()
        for wh in log_.subscribers(event):
            delivery_id, payload = log_.new_delivery(event, project)
            first = Delivery(
                delivery_id, wh["id"], wh["url"], event, payload, str(project.get("id")), None
            )
            drawn = self.faults.draw() if is_loopback(wh["url"]) else NONE
            first.lane = self._lane(first)
            first.drop_first_attempt = drawn.drop_first_attempt
            copies = [first]
            if drawn.duplicate:
                second = dataclasses.replace(first, copy=2, drop_first_attempt=False)
                second.lane = self._lane(second)
                copies.append(second)
            self.journal.opened(first, drawn.labels(), len(copies))
            self._enqueue(copies, drawn, now + drawn.delay_ms / 1000)
            self._start_senders()

    def _enqueue(self, copies: list[Delivery], drawn: Drawn, due: float) -> None:
        for delivery in copies:
            if drawn.reorder_passes:
                self.queue.hold(delivery, drawn.reorder_passes, REORDER_MAX_HOLD_S, due)
            else:
                self.queue.put(delivery, due)

    def _lane(self, delivery: Delivery) -> Hashable:
        """Deliveries of one lane are sent one after the other, each settled before the next."""
        if self.options.order == ORDER_PROJECT:
            return ("project", delivery.webhook_id, delivery.project_id)
        if self.options.order == ORDER_WEBHOOK:
            return ("webhook", delivery.webhook_id)
        return ("delivery", next(self._lane_ids))

    def _run(self) -> None:
        while not self._stopping.is_set():
            # asleep until a delivery is due or the queue stops (`stop`): never polling
            delivery = self.queue.take()
            if delivery is None:
                continue
            try:
                self._attempt(delivery)
            except Exception:
                # a bug here must not leave the delivery pending forever (wait() would hang)
                log.exception("webhook delivery %s failed unexpectedly", delivery.delivery_id)
                self._settle(delivery)

    def _settle(self, delivery: Delivery) -> None:
        # the journal first: once the queue says nothing is pending, the journal is final
        self.journal.settled(delivery)
        self.queue.done(delivery)

    def _attempt(self, delivery: Delivery) -> None:
        """One attempt: send (or drop, or simulate), log it, then settle or schedule a retry."""
        delivery.attempts += 1
        at = now_ms()
        if delivery.drop_first_attempt and delivery.attempts == 1:
            out = Outcome(0, "", self._timed_out(), int(self.timeout * 1000), sent=False)
        elif is_loopback(delivery.url):
            out = self._post(delivery)
        else:
            out = self._simulated()
        log_id = self.store.delivery_log.record(
            delivery.webhook_id,
            event=delivery.event,
            url=delivery.url,
            payload=delivery.payload,
            response_status=out.status,
            response_body=out.body,
            duration_ms=out.duration_ms,
            error=out.error,
        )
        outcome = SUCCESS if out.ok else FAILURE if out.sent else DROPPED
        self.journal.attempted(
            delivery,
            {
                "attempt": delivery.attempts,
                "at": at,
                "sent": out.sent,
                "response_status": out.status,
                "error": out.error,
                "duration_ms": out.duration_ms,
                "outcome": outcome,
                "log_id": log_id,
            },
        )
        retries = self.options.retry_delays
        # a deleted webhook (no log entry) stops its retries, as its log is gone with it
        if out.ok or log_id is None or delivery.attempts > len(retries):
            self._settle(delivery)
        else:
            self.queue.retry(delivery, time.monotonic() + retries[delivery.attempts - 1])

    def _timed_out(self) -> str:
        return f"Timed out after {int(self.timeout * 1000)} ms"

    def _post(self, delivery: Delivery) -> Outcome:
        client = self._http()
        body = delivery.payload.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Webhook-Event": delivery.event,
        }
        secrets = self.secrets.for_webhook(delivery.webhook_id)
        if secrets:
            headers.update(sign_all(secrets, delivery.delivery_id, body))
        started = time.perf_counter()
        status, text, error = 0, "", None
        try:
            r = client.post(delivery.url, content=body, headers=headers)
            status, text = r.status_code, r.text[:2000]
            if not 200 <= status < 300:
                error = f"Receiver responded with HTTP {status}"
        except httpx.TimeoutException:
            error = self._timed_out()
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            error = f"Transport error: {type(exc).__name__}"
        return Outcome(status, text, error, int((time.perf_counter() - started) * 1000))

    def _simulated(self) -> Outcome:
        """A remote receiver, drawn from a seeded stream: no connection leaves the machine."""
        with self._rng_lock:
            u = self._rng.random()
            spread = self._rng.randrange(300)
        if u < 0.9:
            return Outcome(200, '{"ok":true}', None, 30 + spread)
        if u < 0.96:
            error = "Receiver responded with HTTP 500"
            return Outcome(500, "Internal Server Error", error, 20 + spread)
        return Outcome(0, "", self._timed_out(), int(self.timeout * 1000))
