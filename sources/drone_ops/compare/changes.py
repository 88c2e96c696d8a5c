"""Change detection between what the API shows now and what the warehouse holds as current.

Pure and columnar: ids and row hashes in, the ids to load and to retire out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..walk.plan import doubled_ids


@dataclass(frozen=True)
class ChangeSet:
    """What one table's run will write."""

    load_ids: pa.Array
    """Ids of new and changed entities: their rows are loaded as new versions."""
    new: int
    changed: int
    retire_ids: list[str]
    """Ids current in the warehouse that the API no longer returns."""
    current: int
    """How many entities the warehouse held as current before the run."""

    @property
    def retired(self) -> int:
        return len(self.retire_ids)

    @property
    def is_empty(self) -> bool:
        return self.new == 0 and self.changed == 0 and not self.retire_ids


def diff(seen_ids: pa.Array, seen_hashes: pa.Array, current: pa.Table | None) -> ChangeSet:
    """Compares the walked snapshot with the warehouse's current rows (`id`, `_row_hash`)."""
    if current is None or current.num_rows == 0:
        return ChangeSet(seen_ids, len(seen_ids), 0, [], 0)
    current_ids = current.column("id").combine_chunks()
    current_hashes = current.column("_row_hash").combine_chunks()
    known = pc.is_in(seen_ids, value_set=current_ids)
    unchanged = pc.is_in(seen_hashes, value_set=current_hashes)
    load_mask = pc.invert(unchanged)
    doubled = doubled_ids(current)
    if len(doubled):
        # an id with two current versions (written before repeats were settled) is loaded
        # again: the scd2 merge then retires every current version but the one loaded
        load_mask = pc.or_(load_mask, pc.is_in(seen_ids, value_set=doubled))
    new_mask = pc.invert(known)
    changed_mask = pc.and_(known, load_mask)
    gone = pc.invert(pc.is_in(current_ids, value_set=seen_ids))
    retire_ids = current_ids.filter(gone).to_pylist()
    return ChangeSet(
        load_ids=seen_ids.filter(load_mask),
        new=pc.sum(new_mask.cast("int64")).as_py() or 0,
        changed=pc.sum(changed_mask.cast("int64")).as_py() or 0,
        retire_ids=[str(i) for i in retire_ids],
        current=current.num_rows,
    )
