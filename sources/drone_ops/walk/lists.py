"""Plain lists (team members, job types): every page, each id once."""

from __future__ import annotations

from ..exceptions import DroneOpsError
from ..http import page_items
from ..tables.entities import Entity
from ..tables.rows import Record
from .context import WalkContext


def walk_list(context: WalkContext, entity: Entity) -> None:
    """Walks one plain list into its table's snapshot; a failure fails that table only (and
    ends the walk at its next page, should anything else have failed the table)."""
    table, path, items_key = entity.table, str(entity.list_path), str(entity.items_key)
    snapshot = context.tables[table]
    seen: set[str] = set()
    try:
        for page in context.client.paginate(
            path,
            stats=context.stats[table],
            critical=True,
            items_key=items_key,
            stop=lambda: snapshot.failed,
        ):
            context.check_cancelled()
            records = unseen(page_items(page, items_key, path), seen)
            snapshot.offer(records)
            context.report(table, len(records))
    except DroneOpsError as exc:
        snapshot.fail(exc)
    except Exception as exc:
        snapshot.fail(DroneOpsError(f"{table} walk failed: {type(exc).__name__}: {exc}"))


def unseen(records: list[Record], seen: set[str]) -> list[Record]:
    """The records whose id this walk has not met yet (a list may repeat one across pages)."""
    fresh = []
    for record in records:
        record_id = str(record["id"])
        if record_id not in seen:
            seen.add(record_id)
            fresh.append(record)
    return fresh
