"""How hard the client may push the API: an adaptive limit on requests in flight, and the
server's own word on when to come back (Retry-After).

Shared by every worker thread of a run, so one throttled worker slows them all.
"""

from __future__ import annotations

import threading
import time
from email.utils import parsedate_to_datetime

from ..exceptions import Interrupted


class AdaptiveLimiter:
    """Bounds requests in flight with additive increase / multiplicative decrease.

    A 429 halves the limit and pauses every worker until its Retry-After has passed; each run of
    `limit` successes raises it by one again, up to the ceiling. Cursor walks that cannot be
    split are the run's critical path: they do not queue behind job walks for a slot (but obey
    every pause and rate ceiling), so at most one extra request per such walk is in flight.
    """

    def __init__(self, max_concurrency: int, max_requests_per_second: float | None = None) -> None:
        self.max_concurrency = max(1, max_concurrency)
        self.limit = self.max_concurrency
        self._in_flight = 0
        self._successes = 0
        self._paused_until = 0.0
        self._interval = 1.0 / max_requests_per_second if max_requests_per_second else 0.0
        self._next_start = 0.0
        self._cond = threading.Condition()

    def acquire(self, *, critical: bool = False, cancel: threading.Event | None = None) -> None:
        """Waits for a slot; raises `Interrupted` when `cancel` is set meanwhile."""
        with self._cond:
            while True:
                if cancel is not None and cancel.is_set():
                    raise Interrupted("the request")
                now = time.monotonic()
                wait = max(self._paused_until, self._next_start) - now
                if (critical or self._in_flight < self.limit) and wait <= 0:
                    break
                self._cond.wait(timeout=min(wait, 0.25) if wait > 0 else 0.05)
            self._in_flight += 1
            if self._interval:
                self._next_start = max(self._next_start, time.monotonic()) + self._interval

    def release(self, *, throttled: bool, retry_after: float | None = None) -> None:
        with self._cond:
            self._in_flight -= 1
            if throttled:
                self.limit = max(1, self.limit // 2)
                self._successes = 0
                if retry_after:
                    self._paused_until = max(self._paused_until, time.monotonic() + retry_after)
            else:
                self._successes += 1
                if self._successes >= self.limit and self.limit < self.max_concurrency:
                    self.limit += 1
                    self._successes = 0
                    self._cond.notify()
            # one freed slot wakes one waiter: waking them all costs a futex call per waiter per
            # request, with the GIL held; a waiter that cannot go yet re-checks within 50 ms
            self._cond.notify()


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header given as seconds or as an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
