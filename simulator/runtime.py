"""What a running simulator shares between requests: the store, the keys and their scopes,
the fault injector, the delivery worker and the request counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import DeliveryWorker
from .faults import FaultInjector
from .store import Store

READ_ONLY = "read_only"
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
