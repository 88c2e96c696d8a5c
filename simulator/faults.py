"""Fault and latency injection, deterministic by seed.

Faults apply only to GET requests under /v1 and never touch state: the handler still runs (so
`truncate` and `reset` cut a real response) but a failed response never changes anything.
"""

from __future__ import annotations

import random
import threading

KINDS = ("429", "500", "502", "503", "reset", "truncate")


def parse_faults(spec: str | None) -> list[tuple[str, float]]:
    """Parse `kind:prob,kind:prob`; raises ValueError with a readable message."""
    if spec is None or not spec.strip():
        return []
    out: list[tuple[str, float]] = []
    for part in spec.split(","):
        kind, sep, prob = part.strip().partition(":")
        if not sep or kind not in KINDS:
            raise ValueError(
                f"bad fault {part.strip()!r}; expected kind:probability, kind in {KINDS}"
            )
        try:
            p = float(prob)
        except ValueError:
            raise ValueError(f"bad probability in {part.strip()!r}") from None
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability out of [0, 1] in {part.strip()!r}")
        out.append((kind, p))
    if sum(p for _, p in out) > 1.0 + 1e-9:
        raise ValueError("fault probabilities add up to more than 1")
    return out


def parse_latency(spec: str | None) -> tuple[float, float] | None:
    """`50` or `0-20` (milliseconds) to a (low, high) range in seconds."""
    if spec is None or str(spec).strip() == "":
        return None
    text = str(spec).strip()
    lo_s, sep, hi_s = text.partition("-")
    try:
        lo = float(lo_s)
        hi = float(hi_s) if sep else lo
    except ValueError:
        raise ValueError(f"bad latency {text!r}; expected N or A-B milliseconds") from None
    if lo < 0 or hi < lo:
        raise ValueError(f"bad latency range {text!r}")
    return lo / 1000.0, hi / 1000.0


class FaultInjector:
    """Draws one fault decision per GET request from a seeded stream."""

    def __init__(self, seed: int, spec: str | None = None, latency: str | None = None) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(f"{seed}:faults")
        self._lat_rng = random.Random(f"{seed}:latency")
        self.spec: str | None = None
        self.faults: list[tuple[str, float]] = []
        self.latency = parse_latency(latency)
        self.set(spec)

    def set(self, spec: str | None) -> None:
        faults = parse_faults(spec)
        with self._lock:
            self.faults = faults
            self.spec = spec if faults else None

    def draw(self) -> str | None:
        if not self.faults:
            return None
        with self._lock:
            u = self._rng.random()
            acc = 0.0
            for kind, p in self.faults:
                acc += p
                if u < acc:
                    return kind
        return None

    def delay(self) -> float:
        if self.latency is None:
            return 0.0
        lo, hi = self.latency
        with self._lock:
            return lo if lo == hi else self._lat_rng.uniform(lo, hi)
