"""The `users` table's source: every `created_by` object the walk meets, and when it acted.

The API has no user list a read key can walk; creators appear nested in projects and webhooks,
as a person or as an API key. Each is kept once, with the span of `created` times of what it
made, so an unchanged workspace yields unchanged rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..tables.rows import Record, row_hash


@dataclass
class CreatorSeen:
    """A `created_by` object and the span of `created` times of what it created."""

    creator: Record
    first_ms: int | None
    last_ms: int | None


class Creators:
    """Creators seen by the walk's threads; the result does not depend on thread order."""

    def __init__(self) -> None:
        self._seen: dict[str, CreatorSeen] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self) -> Iterator[CreatorSeen]:
        return iter(list(self._seen.values()))

    def remember(self, creator: Any, created: Any) -> None:
        """Tracks a creator's span of `created`; the newest record's copy of the creator wins.
        A missing creator, or one without an id, is not a user."""
        if not isinstance(creator, dict) or creator.get("id") is None:
            return
        created_ms = created if isinstance(created, int) and not isinstance(created, bool) else None
        with self._lock:
            seen = self._seen.get(str(creator["id"]))
            if seen is None:
                self._seen[str(creator["id"])] = CreatorSeen(creator, created_ms, created_ms)
                return
            if created_ms is None:
                return
            if seen.last_ms is None or created_ms > seen.last_ms:
                seen.creator, seen.last_ms = creator, created_ms
            elif created_ms == seen.last_ms and row_hash(creator) > row_hash(seen.creator):
                seen.creator = creator
            if seen.first_ms is None or created_ms < seen.first_ms:
                seen.first_ms = created_ms
