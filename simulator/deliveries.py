"""Webhook delivery logs, emitted from the project histories.

Every project version is an event: the first `project.created`, each later one
`project.updated`. A webhook receives, in time order, every event of the kinds it subscribes to
from its creation on; its creation time is placed so that exactly the scale's number of
deliveries follows it. Each log entry's payload carries the project as it was at that event.
Only the ordering keys (`LazyLog`) live in memory; entries are built on first read.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .seeded import DAY_MS, hex_id, row_rng
from .timeline import ProjectPlan, Version, record

CREATED, UPDATED = "project.created", "project.updated"


@dataclass(slots=True)
class LazyLog:
    """Ordering key of a delivery-log entry whose content is built on first read."""

    event: int  # position in the EventStream (also seeds the entry's own draws)
    webhook_index: int
    created: int
    failed: bool


class EventStream:
    """Every project event in time order, as three compact columns."""

    def __init__(self, histories: Sequence[Sequence[Version]]) -> None:
        rows = sorted(
            (v[0], p, j) for p, versions in enumerate(histories) for j, v in enumerate(versions)
        )
        self.ts = array("q", (r[0] for r in rows))
        self.project = array("l", (r[1] for r in rows))
        self.version = array("l", (r[2] for r in rows))

    def __len__(self) -> int:
        return len(self.ts)

    def kind(self, e: int) -> str:
        return CREATED if self.version[e] == 0 else UPDATED

    def matching(self, event_types: Sequence[str]) -> list[int]:
        """Positions of the events of the given kinds, oldest first."""
        if CREATED in event_types and UPDATED in event_types:
            return list(range(len(self.ts)))
        want_created = CREATED in event_types
        version = self.version
        return [e for e in range(len(version)) if (version[e] == 0) is want_created]


def subscription_start(
    stream: EventStream, matching: list[int], n: int, rng: random.Random, earliest: int
) -> tuple[int, list[int]]:
    """When a webhook was created so that exactly `n` matching events follow, and those events.

    With fewer matching events than `n` (no projects at all) the webhook gets them all.
    """
    delivered = matching[-n:] if n > 0 else []
    if n <= 0 or not matching:
        return earliest, delivered
    first = stream.ts[delivered[0]]
    skipped = len(matching) - len(delivered)
    if skipped == 0:
        return first - 1 - rng.randrange(30 * DAY_MS), delivered
    last_missed = stream.ts[matching[skipped - 1]]
    if first - last_missed <= 1:
        return last_missed, delivered
    return last_missed + 1 + rng.randrange(first - last_missed - 1), delivered


def log_keys(
    stream: EventStream, delivered: list[int], seed: int, w: int, end_ms: int
) -> list[tuple[str, LazyLog]]:
    """Ids and ordering keys of a webhook's log entries, oldest first.

    A delivery is logged up to a second after its event, after the webhook's previous delivery
    (one worker delivers in order) and never after the anchor.
    """
    rng = random.Random(f"{seed}:logkeys:{w}")
    out = []
    previous = -1
    for e in delivered:
        created = min(max(stream.ts[e] + 20 + rng.randrange(980), previous + 1), end_ms)
        previous = created
        log_id = f"whl_{rng.getrandbits(64):016x}"
        out.append((log_id, LazyLog(e, w, created, rng.random() < 0.04)))
    return out


def build_log(
    key: LazyLog,
    log_id: str,
    webhook: dict[str, Any],
    stream: EventStream,
    plans: Sequence[ProjectPlan],
    histories: Sequence[Sequence[Version]],
    seed: int,
    workspace_id: str,
) -> dict[str, Any]:
    """Full record of a generated delivery-log entry: the project as it was at the event."""
    rng = row_rng(seed, f"log{key.webhook_index}", key.event)
    p, v = stream.project[key.event], stream.version[key.event]
    event = stream.kind(key.event)
    payload = {
        "delivery_id": hex_id(rng, "dlv_"),
        "event": event,
        "timestamp": stream.ts[key.event],
        "workspace_id": workspace_id,
        "data": record(plans[p], histories[p][v]),
    }
    if key.failed:
        status, body, err = (
            (500, "Internal Server Error", "Receiver responded with HTTP 500"),
            (0, "", "Timed out after 2000 ms"),
            (404, "Not Found", "Receiver responded with HTTP 404"),
        )[rng.randrange(3)]
    else:
        status, body, err = 200, '{"ok":true}', None
    return {
        "id": log_id,
        "event_type": event,
        "url": webhook["url"],
        "status": "failed" if key.failed else "success",
        "response_status": status,
        "response_body": body,
        "request_payload": orjson.dumps(payload).decode(),
        "duration_ms": 2000 if status == 0 else 40 + rng.randrange(400),
        "error_message": err,
        "created": key.created,
    }
