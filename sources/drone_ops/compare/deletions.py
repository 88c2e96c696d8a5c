"""Where a deletion is decided: every rule that lets a row be retired, in one place.

A row the warehouse holds as current is retired only when all of these hold:
1. the walk that should have contained it finished every page (a failed or interrupted walk
   loads nothing for its table: `TableSnapshot.error`);
2. the comparison found its id missing from that walk (`changes.diff`), within the part of the
   table this run compared (a rolling job refresh compares only the projects it walked:
   `outside_projects`);
3. asking for it by id gives 404 (`confirm_deletions`; a list can miss a row that moved
   mid-walk, such as a project archived between the two project lists), unless more than
   `MAX_DELETION_CHECKS` ids are candidates;
4. the table would not lose more than `max_retire_share` of its current rows, or the run allows
   a mass delete (`mass_delete_refusal`).
Then it is retired by a tombstone row (`tombstones`), which the scd2 merge turns into a closed
validity interval; nothing is ever deleted from a history table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import settings
from ..exceptions import MassDeleteRefused
from ..tables.entities import ENTITIES, Entity
from ..tables.rows import Record, with_required_fields
from ..tables.schema import ARROW_TYPES, Contract
from .changes import ChangeSet, Walked, diff

MAX_DELETION_CHECKS = 2_000
"""Above this many deletion candidates in one table, single-record checks are skipped (the
mass-delete guard still applies)."""

RecordLookup = Callable[[str, Sequence[str]], list[dict[str, Any] | None]]
"""(table, single-record paths) -> each record, or None where the API answered 404."""

Versions = Callable[[], Walked]
"""The walked snapshot's ids and the first look's decisions, read again after records were
replaced (the fetched records had their own first look)."""

Fetched = tuple[Record, str | None]
"""A record fetched by id, with the id of the parent it is listed under (a job's project)."""

Replace = Callable[[list[str], list[Fetched]], None]
"""Puts records fetched by id into the walked snapshot in place of what the lists gave."""


def confirm_deletions(
    table: str,
    changes: ChangeSet,
    current: pa.Table | None,
    *,
    lookup: RecordLookup,
    versions: Versions,
    replace: Replace,
    list_path: str,
) -> ChangeSet:
    """Asks for each deletion candidate by id: only a 404 confirms a deletion. A record that
    still exists replaces its list row (its changes are then loaded), or keeps its current
    version where the single-record shape cannot stand in for a list row (team members)."""
    if not changes.retire_ids or len(changes.retire_ids) > MAX_DELETION_CHECKS:
        return changes
    found, kept = fetch_records(table, changes.retire_ids, current, lookup, list_path)
    if found:
        replace([str(record["id"]) for record, _ in found], found)
        changes = diff(versions(), current)
    if kept:
        keep = set(kept)
        gone = [i for i in changes.retire_ids if i not in keep]
        changes = dataclasses.replace(changes, retire_ids=gone)
    return changes


def fetch_records(
    table: str,
    ids: list[str],
    current: pa.Table | None,
    lookup: RecordLookup,
    list_path: str,
) -> tuple[list[Fetched], list[str]]:
    """Fetches entities one by one: the records of those that exist (each with its parent's
    id, as a listed record has it), plus the ids that exist but whose single-record shape
    cannot stand in for a list row (team members)."""
    entity = ENTITIES[table]
    paths = _single_record_paths(entity, ids, current, list_path)
    if not paths:
        return [], []
    found = lookup(table, list(paths.values()))
    fetched: list[Fetched] = []
    kept: list[str] = []
    for entity_id, record in zip(paths, found, strict=True):
        if record is None:
            continue
        if entity.record_replaces_row and entity.row is not None:
            parent = entity.parent_column
            parent_id = str(record.get(parent, "")) if parent is not None else None
            fetched.append((record, parent_id))
        else:
            # the single-record shape differs from list rows (team members lack status):
            # it exists, so keep its current version rather than retire it
            kept.append(entity_id)
    return fetched, kept


def _single_record_paths(
    entity: Entity, ids: list[str], current: pa.Table | None, list_path: str
) -> dict[str, str]:
    """Where to ask for each id; a record listed under a parent (a job) is found under the
    parent the warehouse knows for it (`list_path` is the configured one for jobs)."""
    if entity.record_path is None:
        return {}
    if entity.parent_column is None:
        return {i: entity.record_path.format(id=i) for i in ids}
    if current is None or entity.parent_column not in current.column_names:
        return {}
    candidates = current.filter(pc.is_in(current.column("id"), pa.array(ids)))
    return {
        str(record_id): entity.record_path.format(
            list_path=list_path.format(**{entity.parent_column: parent_id}), id=record_id
        )
        for record_id, parent_id in zip(
            candidates.column("id").to_pylist(),
            candidates.column(entity.parent_column).to_pylist(),
            strict=True,
        )
        if parent_id is not None
    }


def retire_share_exceeded(changes: ChangeSet, max_share: float) -> bool:
    """True when the run would retire more than `max_share` of the current rows."""
    if not changes.retire_ids or changes.current == 0:
        return False
    return changes.retired / changes.current > max_share


def mass_delete_refusal(
    table: str, changes: ChangeSet, max_share: float, *, allowed: bool
) -> MassDeleteRefused | None:
    """The mass-delete guard: the refusal when this run would retire too much of `table`."""
    if allowed or not retire_share_exceeded(changes, max_share):
        return None
    return MassDeleteRefused(table, changes.retired, changes.current, max_share)


def outside_projects(current: pa.Table, skipped_project_ids: Iterable[str]) -> pa.Table:
    """Current job rows except those of projects whose jobs this run did not walk."""
    skipped = pa.array(list(skipped_project_ids), pa.string())
    if len(skipped) == 0:
        return current
    under_skipped = pc.is_in(current.column("project_id"), value_set=skipped)
    return current.filter(pc.invert(pc.fill_null(under_skipped, False)))


def tombstones(contract: Contract, ids: Sequence[str]) -> pa.Table:
    """Rows that tell the scd2 merge to retire these ids (they are never inserted)."""
    arrays: dict[str, pa.Array] = {}
    for column in contract.columns:
        if column.name == "id":
            arrays["id"] = pa.array(list(ids), pa.string())
        else:
            arrays[column.name] = pa.nulls(len(ids), ARROW_TYPES[column.kind])
    arrays[settings.ROW_HASH_COLUMN] = pa.array([f"retired:{i}" for i in ids], pa.string())
    arrays[settings.TOMBSTONE_COLUMN] = pa.array([True] * len(ids), pa.bool_())
    return with_required_fields(pa.table(arrays))
