"""When each webhook delivery may be attempted: lanes for ordering, a timer heap for backoff and
delays, and events held back to be sent out of order.

A delivery stays at the head of its lane from its first attempt until it is settled (delivered
or out of retries), so deliveries sharing a lane reach the receiver in the order they were
emitted, retries included, while other lanes go on. The worker picks the lane key: per
webhook and project (the default: a receiver applying events sees each project's versions in
order), per webhook (strict), or one lane per delivery (no ordering at all).

Nothing here touches the store or the network: the worker threads call `take`, attempt, then
`retry` or `done`, so the schedule can be tested without HTTP.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Delivery:
    """One event on its way to one webhook; a duplicated event has two, `copy` 1 and 2."""

    delivery_id: str
    webhook_id: str
    url: str
    event: str
    payload: str
    project_id: str
    lane: Hashable
    copy: int = 1
    drop_first_attempt: bool = False
    attempts: int = 0

    @property
    def project_key(self) -> tuple[str, str]:
        return (self.webhook_id, self.project_id)


@dataclass(eq=False)
class _Held:
    """An event held back until `passes` later events of its project have settled, or until
    `until` (so one never followed by another is still sent)."""

    delivery: Delivery
    passes: int
    until: float
    due: float


@dataclass(order=True)
class _Ready:
    due: float
    seq: int
    delivery: Delivery = field(compare=False)


class DeliveryQueue:
    """Lanes, a heap of deliveries due at a time, and held events; `pending` counts them all."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ready: list[_Ready] = []
        self._lanes: dict[Hashable, deque[tuple[Delivery, float]]] = {}
        self._held: list[_Held] = []
        self._seq = itertools.count()
        self._pending = 0
        self._stopped = False

    @property
    def pending(self) -> int:
        with self._cond:
            return self._pending

    def put(self, delivery: Delivery, due: float) -> None:
        """Queue a delivery, to be attempted no earlier than `due` (monotonic seconds)."""
        with self._cond:
            self._pending += 1
            self._enlane(delivery, due)

    def hold(self, delivery: Delivery, passes: int, max_hold_s: float, due: float) -> None:
        """Hold a delivery back until `passes` later ones of its project have settled; once
        released it is attempted no earlier than `due`."""
        with self._cond:
            self._pending += 1
            self._held.append(_Held(delivery, passes, time.monotonic() + max_hold_s, due))
            self._cond.notify_all()

    def take(self, wait_s: float | None = None) -> Delivery | None:
        """The next delivery due now, waiting at most `wait_s` (None: until one is due); None on
        timeout or stop.

        A taker sleeps until the earliest moment something can change without a call here (a
        delivery falls due, a held one's hold ends, the deadline) or until a call that queues,
        retries, settles or stops wakes it: an idle sender costs no CPU, which a server of many
        workspaces, each with its own senders, would otherwise pay for every second it runs.
        """
        deadline = math.inf if wait_s is None else time.monotonic() + wait_s
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                self._release_expired(now)
                if self._ready and self._ready[0].due <= now:
                    return heapq.heappop(self._ready).delivery
                if now >= deadline:
                    return None
                wake = min(
                    deadline,
                    self._ready[0].due if self._ready else math.inf,
                    min((h.until for h in self._held), default=math.inf),
                )
                self._cond.wait(None if wake == math.inf else max(wake - now, 0.001))
            return None

    def retry(self, delivery: Delivery, due: float) -> None:
        """Attempt again at `due`; the delivery keeps the head of its lane meanwhile."""
        with self._cond:
            heapq.heappush(self._ready, _Ready(due, next(self._seq), delivery))
            self._cond.notify_all()

    def done(self, delivery: Delivery) -> None:
        """The delivery is settled: held events of its project count it, and its lane moves on.

        A held event released by this one goes first in this lane, so it arrives right after
        the event that passed it, not after whatever else of the project queued meanwhile.
        """
        with self._cond:
            lane = self._lanes[delivery.lane]
            lane.popleft()
            self._pending -= 1
            released = self._passed(delivery) if delivery.copy == 1 else []
            for held in reversed(released):
                if held.delivery.lane == delivery.lane:
                    lane.appendleft((held.delivery, held.due))
                else:
                    self._enlane(held.delivery, held.due)
            if lane:
                following, due = lane[0]
                heapq.heappush(self._ready, _Ready(due, next(self._seq), following))
            else:
                del self._lanes[delivery.lane]
            self._cond.notify_all()

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

    def stop(self) -> None:
        """Wake every taker; they return None from now on (what is queued is abandoned)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _enlane(self, delivery: Delivery, due: float) -> None:
        lane = self._lanes.get(delivery.lane)
        if lane is None:
            self._lanes[delivery.lane] = deque([(delivery, due)])
            heapq.heappush(self._ready, _Ready(due, next(self._seq), delivery))
        else:
            lane.append((delivery, due))
        self._cond.notify_all()

    def _passed(self, settled: Delivery) -> list[_Held]:
        """A later event of the same project settled: the held ones it was the last to pass,
        taken out of the held list (oldest first)."""
        keep: list[_Held] = []
        released: list[_Held] = []
        for held in self._held:
            if held.delivery.project_key == settled.project_key:
                held.passes -= 1
                if held.passes <= 0:
                    released.append(held)
                    continue
            keep.append(held)
        self._held = keep
        return released

    def _release_expired(self, now: float) -> None:
        if not self._held or min(h.until for h in self._held) > now:
            return
        for held in [h for h in self._held if h.until <= now]:
            self._held.remove(held)
            self._enlane(held.delivery, max(held.due, now))
