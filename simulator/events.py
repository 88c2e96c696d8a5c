"""Webhook delivery worker: delivers project events off the request path.

Real HTTP is sent only to loopback receivers; any other host is simulated deterministically so
the simulator never opens a connection off the machine.
"""

from __future__ import annotations

import ipaddress
import queue
import random
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from .store import Store

DELIVERY_TIMEOUT_S = 2.0


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


class DeliveryWorker:
    """A queue and one thread; `wait()` blocks until every queued delivery is logged."""

    def __init__(self, store: Store, seed: int, timeout: float = DELIVERY_TIMEOUT_S) -> None:
        self.store = store
        self.timeout = timeout
        self._queue: queue.Queue[tuple[str, str, str, str] | None] = queue.Queue()
        self._pending = 0
        self._cond = threading.Condition()
        self._rng = random.Random(f"{seed}:deliveries")
        self._thread = threading.Thread(target=self._run, name="webhook-delivery", daemon=True)
        self._client: httpx.Client | None = None
        store.state.on_event = self.submit

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=self.timeout + 3)

    @property
    def pending(self) -> int:
        with self._cond:
            return self._pending

    def submit(self, event: str, project: dict[str, Any]) -> None:
        """Called by the store (under its lock) when a project event happens."""
        log = self.store.delivery_log
        for wh in log.subscribers(event):
            payload = log.event_payload(event, project)
            with self._cond:
                self._pending += 1
            self._queue.put((wh["id"], wh["url"], event, payload))

    def wait(self, timeout: float) -> int:
        """Block until nothing is pending or the timeout passes; returns what is still pending."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self._pending

    def _run(self) -> None:
        self._client = httpx.Client(timeout=self.timeout, trust_env=False)
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                try:
                    self._deliver(*item)
                finally:
                    with self._cond:
                        self._pending -= 1
                        self._cond.notify_all()
        finally:
            self._client.close()

    def _deliver(self, webhook_id: str, url: str, event: str, payload: str) -> None:
        started = time.perf_counter()
        status, body, error = 0, "", None
        if is_loopback(url):
            assert self._client is not None
            try:
                r = self._client.post(
                    url,
                    content=payload.encode(),
                    headers={
                        "Content-Type": "application/json",
                        "User-Agent": "drone-ops-simulator/1",
                        "X-Webhook-Event": event,
                    },
                )
                status, body = r.status_code, r.text[:2000]
                if not 200 <= status < 300:
                    error = f"Receiver responded with HTTP {status}"
            except httpx.TimeoutException:
                error = f"Timed out after {int(self.timeout * 1000)} ms"
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                error = f"Transport error: {type(exc).__name__}"
            duration = int((time.perf_counter() - started) * 1000)
        else:
            u = self._rng.random()
            if u < 0.9:
                status, body, duration = 200, '{"ok":true}', 30 + self._rng.randrange(300)
            elif u < 0.96:
                status, body, duration = 500, "Internal Server Error", 20 + self._rng.randrange(200)
                error = "Receiver responded with HTTP 500"
            else:
                duration = int(self.timeout * 1000)
                error = f"Timed out after {duration} ms"
        self.store.delivery_log.record(
            webhook_id,
            event=event,
            url=url,
            payload=payload,
            response_status=status,
            response_body=body,
            duration_ms=duration,
            error=error,
        )
