"""Project events (webhook deliveries, spec part 6) as project versions and audit rows.

For each project the newest version a batch of `project.created` / `project.updated` events
carries, only when newer than the warehouse's (the project's `updated`, then the event's
`timestamp`), so a duplicate, out-of-order or late retry never overwrites a newer row; plus
one audit row per delivery for `_webhook_events`. The versions are built by the batch walk's
row builder and hash, so the next `drone-sync run` finds them unchanged, and repairs whatever
the events got wrong or missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa
from dlt.common.schema.typing import TColumnSchema

from .tables.entities import ENTITIES
from .tables.lines import typed_records
from .tables.rows import Issue, creator_flattened_row
from .tables.schema import TIMESTAMP_HINT

EVENTS_TABLE = "_webhook_events"
PROJECT_EVENTS = frozenset({"project.created", "project.updated"})

APPLIED = "applied"
"""The event's project version was loaded."""
NOT_NEWER = "not_newer"
"""The warehouse (or another event of the batch) already held this version or a newer one."""
NOT_A_PROJECT_EVENT = "ignored"
"""An event of another kind, or a project event without a usable project: kept for audit."""
UNROUTED = "unrouted"
"""Its `workspace_id` belongs to no configured workspace (docs/events.md, routing)."""


@dataclass(frozen=True)
class ReceivedEvent:
    """One spooled delivery: the event as delivered and when the receiver took it."""

    event: Mapping[str, Any]
    received_at_ms: int
    signed: bool

    @property
    def delivery_id(self) -> str:
        return str(self.event.get("delivery_id"))

    @property
    def workspace_id(self) -> str | None:
        value = self.event.get("workspace_id")
        return str(value) if value is not None else None

    def project(self) -> Mapping[str, Any] | None:
        """The project the event carries, if it is a project event with an id and `updated`."""
        data = self.event.get("data")
        if self.event.get("event") not in PROJECT_EVENTS or not isinstance(data, Mapping):
            return None
        if not isinstance(data.get("id"), str) or not isinstance(data.get("updated"), int):
            return None
        return data

    def order(self) -> tuple[int, int]:
        """Which of two versions of a project is newer: its `updated`, then the event time."""
        project = self.project() or {}
        timestamp = self.event.get("timestamp")
        return (int(project.get("updated", 0)), timestamp if isinstance(timestamp, int) else 0)


def newest_versions(
    events: Sequence[ReceivedEvent], held: Mapping[str, int]
) -> tuple[dict[str, ReceivedEvent], dict[str, str]]:
    """The event to apply per project id, and every delivery's outcome: applied only when its
    project is newer than `held` (unix ms per id) and every other event of the batch for it."""
    newest: dict[str, ReceivedEvent] = {}
    outcomes: dict[str, str] = {}
    for received in events:
        project = received.project()
        if project is None:
            outcomes[received.delivery_id] = NOT_A_PROJECT_EVENT
            continue
        project_id = str(project["id"])
        best = newest.get(project_id)
        if best is None or received.order() > best.order():
            newest[project_id] = received
    for received in events:
        project = received.project()
        if project is None:
            continue
        project_id = str(project["id"])
        is_newest = newest[project_id] is received
        newer = int(project["updated"]) > held.get(project_id, -1)
        outcomes[received.delivery_id] = APPLIED if is_newest and newer else NOT_NEWER
    applied = {
        project_id: received
        for project_id, received in newest.items()
        if outcomes[received.delivery_id] == APPLIED
    }
    return applied, outcomes


def drop_older_versions(batch: pa.Table, held: Mapping[str, int]) -> pa.Table:
    """The batch's project rows whose `updated` is not older than `held` (unix ms per id): the
    versions events wrote while a run walked, which its listing must not take back."""
    if not held or not batch.num_rows:
        return batch
    updated = batch.column("updated").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    keep = [
        value is None or value >= held.get(str(project_id), value)
        for project_id, value in zip(
            batch.column("id").to_pylist(), updated.to_pylist(), strict=True
        )
    ]
    return batch.filter(pa.array(keep, pa.bool_()))


def project_versions(events: Iterable[ReceivedEvent], run_id: str) -> pa.Table:
    """The projects rows of the applied events, typed like the walk's (breaches dropped: the
    batch run reports them in `_sync_issues`)."""
    records = [dict(received.project() or {}) for received in events]
    issues: list[Issue] = []
    return typed_records(
        ENTITIES["projects"].contract,
        records,
        run_id=run_id,
        issues=issues,
        row=creator_flattened_row,
    )


def event_rows(
    events: Sequence[ReceivedEvent], outcomes: Mapping[str, str], default: str | None = None
) -> pa.Table:
    """One `_webhook_events` row per delivery: what arrived, when, and what became of it."""

    def ts(ms: Any) -> datetime | None:
        return datetime.fromtimestamp(ms / 1000, UTC) if isinstance(ms, int) else None

    rows = []
    for received in events:
        project = received.project() or {}
        rows.append(
            {
                "delivery_id": received.delivery_id,
                "event": str(received.event.get("event")),
                "event_timestamp": ts(received.event.get("timestamp")),
                "workspace_id": received.workspace_id,
                "received_at": ts(received.received_at_ms),
                "signed": received.signed,
                "project_id": project.get("id"),
                "project_updated": ts(project.get("updated")),
                "outcome": outcomes.get(received.delivery_id, default),
                "payload": orjson.dumps(dict(received.event)).decode(),
            }
        )
    return pa.Table.from_pylist(rows, schema=EVENTS_SCHEMA)


EVENTS_SCHEMA = pa.schema(
    [
        ("delivery_id", pa.string()),
        ("event", pa.string()),
        ("event_timestamp", pa.timestamp("us", tz="UTC")),
        ("workspace_id", pa.string()),
        ("received_at", pa.timestamp("us", tz="UTC")),
        ("signed", pa.bool_()),
        ("project_id", pa.string()),
        ("project_updated", pa.timestamp("us", tz="UTC")),
        ("outcome", pa.string()),
        ("payload", pa.string()),
    ]
)
"""`_webhook_events` (docs/warehouse.md): merged on `delivery_id`, so an event applied twice
(a crash between the load and the spool's applied mark) is one row."""

EVENTS_COLUMNS: dict[str, TColumnSchema] = {
    field.name: (
        {**TIMESTAMP_HINT, "nullable": True}
        if pa.types.is_timestamp(field.type)
        else {"data_type": "bool" if pa.types.is_boolean(field.type) else "text", "nullable": True}
    )
    for field in EVENTS_SCHEMA
}
"""The same columns as dlt hints, so the table a run creates empty (for the models) is the
table the receiver's batches merge into."""
