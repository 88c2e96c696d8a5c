"""What a running simulator shares between requests: the store, the keys and their scopes,
the fault injector, the delivery worker and the request counts."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from .events import DeliveryWorker
from .faults import FaultInjector
from .store import Store

GATE_HOLD_LIMIT_S = 300.0
"""The longest a closed gate holds one request: a bound for a test that forgot to open it."""

READ_ONLY = "read_only"


class Gate:
    """Holds the API's answers while closed (admin only). A test closes it to keep a sync in the
    middle of its walk until it has seen what it waits for (another workspace's sync in
    flight, another run of the same workspace told to wait), then opens it: an order of events
    made certain by a condition instead of hoped for from the machine's timing."""

    def __init__(self) -> None:
        self.closed = False
        self.held = 0
        """Requests held since the gate last closed."""

    def close(self) -> None:
        self.closed, self.held = True, 0

    async def pass_through(self) -> None:
        if not self.closed:
            return
        self.held += 1
        deadline = time.monotonic() + GATE_HOLD_LIMIT_S
        while self.closed and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


FULL_ACCESS = "full_access"


@dataclass
class Runtime:
    """Everything a running simulator shares between requests."""

    store: Store
    read_key: str
    full_key: str
    faults: FaultInjector
    worker: DeliveryWorker
    admin: bool = False
    gate: Gate = field(default_factory=Gate)
    stats: dict[str, int] = field(default_factory=dict)

    def scope_of(self, header: str | None) -> str | None:
        if not header or header[:7].lower() != "bearer ":
            return None
        key = header[7:].strip()
        if key == self.full_key:
            return FULL_ACCESS
        if key == self.read_key:
            return READ_ONLY
        return None
