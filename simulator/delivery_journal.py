"""Every delivery the worker handled since start (or the last reset), by `delivery_id`, with each
attempt and its outcome: what the admin API shows tests so they can compare what the sender
did with what their receiver got.

The delivery log of the API (spec 2.6) has one entry per attempt too, but it carries neither the
delivery id nor whether the request was really sent (a `drop_first_attempt` fault logs a
timeout without sending); this journal says both. It is bounded: past `capacity` deliveries
the oldest are forgotten, so a long benchmark does not grow it without end.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

from .delivery_queue import Delivery

DEFAULT_CAPACITY = 100_000

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
SUCCESS, FAILURE, DROPPED = "success", "failed", "dropped"


class DeliveryJournal:
    """Deliveries by id, oldest first, each with its attempts; safe across worker threads."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._lock = threading.Lock()
        self._capacity = capacity
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._open: dict[str, int] = {}

    def opened(self, delivery: Delivery, faults: list[str], copies: int) -> None:
        """A new event for a webhook: `copies` is 2 when it is to be sent twice."""
        with self._lock:
            self._records[delivery.delivery_id] = {
                "delivery_id": delivery.delivery_id,
                "webhook_id": delivery.webhook_id,
                "event": delivery.event,
                "project_id": delivery.project_id,
                "url": delivery.url,
                "faults": faults,
                "status": PENDING,
                "attempts": [],
            }
            self._open[delivery.delivery_id] = copies
            while len(self._records) > self._capacity:
                old, _ = self._records.popitem(last=False)
                self._open.pop(old, None)

    def attempted(self, delivery: Delivery, attempt: dict[str, Any]) -> None:
        """One attempt of one copy, as logged (`attempt` carries its outcome)."""
        with self._lock:
            record = self._records.get(delivery.delivery_id)
            if record is None:
                return
            record["attempts"].append({"copy": delivery.copy, **attempt})
            if attempt["outcome"] == SUCCESS:
                record["status"] = DELIVERED

    def settled(self, delivery: Delivery) -> None:
        """A copy is done (delivered or out of attempts); with none open and no success, the
        delivery failed."""
        with self._lock:
            left = self._open.get(delivery.delivery_id)
            if left is None:
                return
            if left > 1:
                self._open[delivery.delivery_id] = left - 1
                return
            del self._open[delivery.delivery_id]
            record = self._records[delivery.delivery_id]
            if record["status"] == PENDING:
                record["status"] = FAILED

    def snapshot(self, webhook_id: str | None = None) -> list[dict[str, Any]]:
        """Copies of the records, oldest first, of one webhook or all."""
        with self._lock:
            return [
                copy.deepcopy(r)
                for r in self._records.values()
                if webhook_id is None or r["webhook_id"] == webhook_id
            ]

    def clear(self) -> int:
        """Forget settled deliveries (pending ones stay, so their attempts still land); returns
        how many were forgotten."""
        with self._lock:
            gone = [k for k in self._records if k not in self._open]
            for key in gone:
                del self._records[key]
            return len(gone)
