"""Webhook delivery faults on demand: what a real vendor's sender sometimes does to a receiver.

The API faults (`faults.py`) shape what a client of /v1 sees; these shape what a webhook
receiver sees, so the receiver's dedupe, ordering and gap detection can be tested against the
simulator rather than against requests a test forges. A spec is `kind:amount[:param]`, comma
separated, for example `duplicate:0.1,reorder:2x,delay:0.5:250,drop_first_attempt:1x`:

- `amount` is a probability (`0` to `1`, drawn per delivery from a seeded stream) or a count
  `Nx` (the next N deliveries, then the fault is spent), so a test can ask for exactly one.
- `delay` takes the delay in ms as its param (default 500); `reorder` takes how many later
  events of the same project pass the held one (default 1).

Each kind is drawn on its own, so one delivery can be both delayed and duplicated.
"""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass

DUPLICATE = "duplicate"
REORDER = "reorder"
DELAY = "delay"
DROP_FIRST_ATTEMPT = "drop_first_attempt"
KINDS = (DUPLICATE, REORDER, DELAY, DROP_FIRST_ATTEMPT)

DEFAULT_PARAM = {DELAY: 500, REORDER: 1}
MAX_PARAM = {DELAY: 600_000, REORDER: 100}
MAX_COUNT = 1_000_000


@dataclass
class DeliveryFault:
    """One configured kind: either a probability or a remaining count, and its parameter."""

    kind: str
    probability: float | None
    remaining: int | None
    param: int | None


@dataclass(frozen=True)
class Drawn:
    """The faults one delivery got: None or 0 where a kind was not drawn."""

    duplicate: bool = False
    reorder_passes: int = 0
    delay_ms: int = 0
    drop_first_attempt: bool = False

    def labels(self) -> list[str]:
        """How the admin API names what was applied, e.g. `["delay:250", "duplicate"]`."""
        out = []
        if self.delay_ms:
            out.append(f"{DELAY}:{self.delay_ms}")
        if self.reorder_passes:
            out.append(f"{REORDER}:{self.reorder_passes}")
        if self.duplicate:
            out.append(DUPLICATE)
        if self.drop_first_attempt:
            out.append(DROP_FIRST_ATTEMPT)
        return out


NONE = Drawn()


def _amount(text: str, part: str) -> tuple[float | None, int | None]:
    """`0.25` is a probability, `3x` a count."""
    if text.endswith("x"):
        try:
            count = int(text[:-1])
        except ValueError:
            raise ValueError(f"bad count in {part!r}; expected Nx, e.g. 2x") from None
        if not 1 <= count <= MAX_COUNT:
            raise ValueError(f"count out of [1, {MAX_COUNT}] in {part!r}")
        return None, count
    try:
        p = float(text)
    except ValueError:
        raise ValueError(f"bad amount in {part!r}; expected a probability or Nx") from None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability out of [0, 1] in {part!r}")
    return p, None


def _param(kind: str, text: str | None, part: str) -> int | None:
    if kind not in DEFAULT_PARAM:
        if text is not None:
            raise ValueError(f"{kind} takes no parameter: {part!r}")
        return None
    if text is None:
        return DEFAULT_PARAM[kind]
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"bad parameter in {part!r}; expected a whole number") from None
    if not 1 <= value <= MAX_PARAM[kind]:
        raise ValueError(f"parameter out of [1, {MAX_PARAM[kind]}] in {part!r}")
    return value


def parse_delivery_faults(spec: str | None) -> list[DeliveryFault]:
    """Parse `kind:amount[:param],...`; raises ValueError with a readable message."""
    if spec is None or not spec.strip():
        return []
    out: list[DeliveryFault] = []
    for raw in spec.split(","):
        part = raw.strip()
        fields = part.split(":")
        if len(fields) not in (2, 3) or fields[0] not in KINDS:
            raise ValueError(
                f"bad delivery fault {part!r}; expected kind:amount[:param], kind in {KINDS}"
            )
        if any(f.kind == fields[0] for f in out):
            raise ValueError(f"delivery fault {fields[0]} given twice")
        probability, remaining = _amount(fields[1], part)
        param = _param(fields[0], fields[2] if len(fields) == 3 else None, part)
        out.append(DeliveryFault(fields[0], probability, remaining, param))
    return out


class DeliveryFaultInjector:
    """Draws the faults of each delivery from a seeded stream; counts are spent as drawn."""

    def __init__(self, seed: int, spec: str | None = None) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(f"{seed}:delivery-faults")
        self.spec: str | None = None
        self.faults: list[DeliveryFault] = []
        self.set(spec)

    def set(self, spec: str | None) -> None:
        """Replace the configuration (counts start afresh)."""
        faults = parse_delivery_faults(spec)
        with self._lock:
            self.faults = faults
            self.spec = spec if faults else None

    def state(self) -> list[dict[str, object]]:
        """What is configured and how much of each count is left, for the admin API."""
        with self._lock:
            return [asdict(f) for f in self.faults]

    def _hit(self, fault: DeliveryFault) -> bool:
        if fault.remaining is not None:
            if fault.remaining <= 0:
                return False
            fault.remaining -= 1
            return True
        return self._rng.random() < (fault.probability or 0.0)

    def draw(self) -> Drawn:
        """The faults of one delivery (every kind drawn on its own)."""
        if not self.faults:
            return NONE
        hits: dict[str, int] = {}
        with self._lock:
            for fault in self.faults:
                if self._hit(fault):
                    hits[fault.kind] = fault.param or 1
        return Drawn(
            duplicate=DUPLICATE in hits,
            reorder_passes=hits.get(REORDER, 0),
            delay_ms=hits.get(DELAY, 0),
            drop_first_attempt=DROP_FIRST_ATTEMPT in hits,
        )
