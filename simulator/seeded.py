"""Seeded randomness and the time units every generator module shares."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

DAY_MS = 86_400_000
HOUR_MS = 3_600_000


def row_rng(seed: int, kind: str, index: int) -> random.Random:
    """An independent RNG per row, so lazy rows don't depend on generation order."""
    return random.Random(f"{seed}:{kind}:{index}")


def hex_id(rng: random.Random, prefix: str, bits: int = 64) -> str:
    return f"{prefix}{rng.getrandbits(bits):0{bits // 4}x}"


def date_ms(d: date) -> int:
    """Midnight UTC of a date, in ms."""
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()) * 1000


def ms_to_date(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date()


def between(rng: random.Random, lo: int, hi: int) -> int:
    """A uniform draw in [lo, hi), or lo when the interval is empty."""
    return lo + rng.randrange(hi - lo) if hi > lo else lo
