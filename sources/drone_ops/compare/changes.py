"""Change detection between what the API shows now and what the warehouse holds as current.

Change is looked at once per record: `first_look`, as the walk hands a page to its table's
snapshot, keeps a record the warehouse holds as current as id and hash only. `diff`, once the
walk has ended, takes those decisions as they are and only adds what needs the whole walk:
which records to load are new, which changed, and which current ids the walk did not see.
Pure and columnar: nothing here reads the warehouse or the API.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from .. import settings
from ..tables.rows import Record, line_hash, record_line


@dataclass
class FirstLook:
    """One batch of records split by the first look: held versions as ids and hashes, the
    others as the canonical lines their hashes were made of (what the typing reads)."""

    held_ids: list[str] = field(default_factory=list)
    held_hashes: list[str] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    """The row hashes of `lines`, in the same order."""


def first_look(records: Iterable[Record], held: frozenset[str]) -> FirstLook:
    """Hashes each listed record's canonical line (`record_line`) and splits the batch: those
    whose hash is in `held` (the warehouse's current versions) need nothing but their id."""
    look = FirstLook()
    for record in records:
        line = record_line(record)
        version = line_hash(line)
        if version in held:
            look.held_ids.append(str(record["id"]))
            look.held_hashes.append(version)
        else:
            look.lines.append(line)
            look.hashes.append(version)
    return look


def repeated_ids(ids: pa.Array) -> pa.Array:
    """The ids that occur more than once in `ids`."""
    counts = pc.value_counts(ids)
    return counts.field("values").filter(pc.greater(counts.field("counts"), 1))


def held_hashes(current: pa.Table) -> frozenset[str]:
    """The row hashes the first look counts as held: every current version except those of
    doubled ids (more than one current version), whose rows must be loaded again so the scd2
    merge retires the extra version (a doubled id is never held, so its rows are always typed
    and spilled)."""
    doubled = repeated_ids(current.column("id").combine_chunks())
    if len(doubled):
        current = current.filter(pc.invert(pc.is_in(current.column("id"), value_set=doubled)))
    return frozenset(current.column(settings.ROW_HASH_COLUMN).to_pylist())


@dataclass(frozen=True)
class Walked:
    """Each id the walk saw, once, with what the first look decided for its chosen version."""

    ids: pa.Array
    held: pa.Array
    """True where the warehouse holds that version as current (kept as id and hash only)."""


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


def diff(walked: Walked, current: pa.Table | None) -> ChangeSet:
    """The change set from the first look's decisions: the ids it did not find held load (new
    when the warehouse holds no current row of the id, changed when it does); current ids the
    walk did not see are gone. `current` holds the warehouse's current `id`s (narrowed to the
    part of the table this run compared)."""
    load_ids = walked.ids.filter(pc.invert(walked.held))
    if current is None or current.num_rows == 0:
        return ChangeSet(load_ids, len(load_ids), 0, [], 0)
    current_ids = current.column("id").combine_chunks()
    changed = pc.sum(pc.is_in(load_ids, value_set=current_ids).cast("int64")).as_py() or 0
    gone = pc.invert(pc.is_in(current_ids, value_set=walked.ids))
    return ChangeSet(
        load_ids=load_ids,
        new=len(load_ids) - changed,
        changed=changed,
        retire_ids=[str(i) for i in current_ids.filter(gone).to_pylist()],
        current=current.num_rows,
    )
