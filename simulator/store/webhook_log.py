"""One webhook's delivery log: the generated entries as columns of machine words, the entries
recorded since as rows, and pages of both, newest first.

The generated entries are most of a workspace's rows, and each is only a key until it is read
(`deliveries.py` builds it). Kept as objects (an id string, a key tuple, a `LazyLog`, dict
slots), those keys were most of what a server of hundreds of workspaces held; as columns they
are a few machine words each (docs/performance.md, "Five hundred workspaces").
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any

from ..deliveries import LazyLog
from .keyset import PAGE_SIZE, Key, KeyIndex

_ID_PREFIX = "whl_"
Build = Callable[[str, LazyLog], dict[str, Any]]


def _id_bits(log_id: str) -> int:
    """The 64 random bits of a generated id (`whl_` and 16 hex digits), which `_log_id` spells
    back exactly."""
    bits = int(log_id.removeprefix(_ID_PREFIX), 16)
    if _log_id(bits) != log_id:
        raise ValueError(f"not a generated delivery-log id: {log_id!r}")
    return bits


def _log_id(bits: int) -> str:
    return f"{_ID_PREFIX}{bits:016x}"


class WebhookLog:
    """The generated entries in (created, id) order as columns; recorded ones as rows."""

    __slots__ = ("_created", "_events", "_failed", "_ids", "_keys", "_recorded", "webhook_index")

    def __init__(self, webhook_index: int = -1, generated: Sequence[tuple[str, LazyLog]] = ()):
        self.webhook_index = webhook_index
        ordered = sorted(generated, key=lambda item: (item[1].created, item[0]))
        self._created = array("q", (key.created for _, key in ordered))
        self._events = array("q", (key.event for _, key in ordered))
        self._failed = bytes(key.failed for _, key in ordered)
        self._ids = array("Q", (_id_bits(log_id) for log_id, _ in ordered))
        self._recorded: dict[str, dict[str, Any]] = {}
        self._keys = KeyIndex()
        """(created, id) of the recorded entries."""

    def __len__(self) -> int:
        return len(self._created) + len(self._recorded)

    def record(self, entry: dict[str, Any]) -> None:
        """An entry logged at run time (a delivery attempt, admin churn)."""
        self._recorded[entry["id"]] = entry
        self._keys.add((entry["created"], entry["id"]))

    def _generated_key(self, i: int) -> Key:
        return (self._created[i], _log_id(self._ids[i]))

    def _generated(self, i: int, build: Build) -> dict[str, Any]:
        key = LazyLog(self._events[i], self.webhook_index, self._created[i], bool(self._failed[i]))
        return build(_log_id(self._ids[i]), key)

    def page(self, after: Key | None, build: Build) -> tuple[list[dict[str, Any]], Key | None]:
        """Up to PAGE_SIZE entries before `after`, newest first, and the cursor key (None when
        nothing older is left): what `KeyIndex.page(after, reverse=True)` answers over the keys
        of both kinds of entry, generated ones built by `build`."""
        recorded = self._keys.keys
        g = len(self._created) if after is None else self._bisect(after)
        r = len(recorded) if after is None else bisect_left(recorded, after)
        g, r = g - 1, r - 1
        rows: list[dict[str, Any]] = []
        last: Key | None = None
        while g >= 0 or r >= 0:
            generated = self._generated_key(g) if g >= 0 else None
            if generated is not None and (r < 0 or generated > recorded[r]):
                if len(rows) == PAGE_SIZE:
                    return rows, last
                rows.append(self._generated(g, build))
                last, g = generated, g - 1
            else:
                if len(rows) == PAGE_SIZE:
                    return rows, last
                last = recorded[r]
                rows.append(self._recorded[last[1]])
                r -= 1
        return rows, None

    def _bisect(self, key: Key) -> int:
        """The first generated position whose key is not below `key`."""
        return bisect_left(range(len(self._created)), key, key=self._generated_key)
