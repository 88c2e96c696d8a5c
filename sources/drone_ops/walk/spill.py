"""The spill store: one table's rows as a run's walk saw them, kept on local disk as typed
Arrow batches and handed back (`batches`, `take_loadable`), so memory stays flat however large
the workspace. Held records stay in memory as id and hash only; each batch carries what the
first look decided for its rows (`SpilledBatch.held`), so the comparison after the walk never
looks at a hash again (docs/architecture.md, "One page of jobs, hop by hop").
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather

from .. import settings
from ..compare.changes import FirstLook, Walked, first_look, repeated_ids
from ..compare.deletions import Fetched
from ..exceptions import DroneOpsError, Interrupted
from ..tables.breaches import Issue
from ..tables.entities import Entity
from ..tables.lines import LineBuffer, typed_batch
from ..tables.rows import Record

SPILL_PREFIX = "drone-ops-walk-"
"""Spill folders are named so a later run can find and remove those a killed run left."""


@dataclass(frozen=True)
class SpilledBatch:
    """One batch of a table's snapshot: typed rows on local disk, or (`path` None) records the
    first look found held, kept as ids and hashes only and never written."""

    path: Path | None
    ids: pa.Array
    hashes: pa.Array | None
    authoritative: bool = False
    """Rows fetched one by one to settle a conflict; they replace list rows of the same ids."""

    @property
    def held(self) -> bool:
        """What the first look decided for every row of the batch: the warehouse holds these
        versions as current (only held records are kept without their rows)."""
        return self.path is None


@dataclass
class PendingLines:
    """Records of one table waiting to be typed: their JSON lines, row hashes and parents."""

    lines: LineBuffer = field(default_factory=LineBuffer)
    versions: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)

    def add(self, look: FirstLook, parent_id: str | None) -> None:
        """The records the first look did not find held, listed under `parent_id`."""
        for line in look.lines:
            self.lines.append(line)
        self.versions.extend(look.hashes)
        self.parents.extend([parent_id] * len(look.lines))


class TableSnapshot:
    """One table's rows as this run's walk saw them, spilled in typed Arrow batches."""

    def __init__(
        self,
        entity: Entity,
        spill_dir: Path,
        run_id: str,
        issues: list[Issue],
        held_hashes: frozenset[str] = frozenset(),
    ) -> None:
        self.entity = entity
        self.name = entity.table
        self.held_hashes = held_hashes
        """Row hashes the first look counts as held (`changes.held_hashes`)."""
        self._pending_held_ids: list[str] = []
        self._pending_held_hashes: list[str] = []
        self._held_batches: list[SpilledBatch] = []
        """Held records moved from Python lists into Arrow arrays, which take less memory."""
        self.error: DroneOpsError | None = None
        self.rows_seen = 0
        self._spill_dir = spill_dir
        self._run_id = run_id
        self._issues = issues
        self._pending = PendingLines()
        self._batches: list[SpilledBatch] = []
        self._taken = 0
        """Batches handed out by `take_loadable` (deliveries load in waves)."""
        self._emitted: list[pa.Array] = []
        """Ids `take_loadable` handed out, when it drops repeats (an appended first load)."""
        self._replaced = pa.array([], pa.string())
        self._file_number = 0
        self._lock = threading.Lock()

    @property
    def failed(self) -> bool:
        return self.error is not None

    def fail(self, error: DroneOpsError) -> None:
        with self._lock:
            if self.error is None:
                self.error = error

    def interrupt(self) -> None:
        """Marks the table interrupted, whatever its walk reports afterwards."""
        with self._lock:
            self.error = Interrupted(f"the walk of {self.name}")

    def offer(self, records: list[Record], parent_id: str | None = None) -> list[str]:
        """Adds records listed under `parent_id`: held ones as id and hash only, the others as
        JSON lines typed a batch at a time. Returns the held ids (for the rolling refresh)."""
        look = first_look(records, self.held_hashes)
        batch: PendingLines | None = None
        with self._lock:
            self._pending_held_ids.extend(look.held_ids)
            self._pending_held_hashes.extend(look.held_hashes)
            if len(self._pending_held_ids) >= settings.ARROW_BATCH_ROWS:
                self._held_batches.append(self._pending_held())
                self._pending_held_ids, self._pending_held_hashes = [], []
            self.rows_seen += len(records)
            self._pending.add(look, parent_id)
            if len(self._pending.lines) >= settings.ARROW_BATCH_ROWS:
                batch, self._pending = self._pending, PendingLines()
        if batch is not None:
            self._type_and_keep(batch)
        return look.held_ids

    def replace(self, ids: list[str], fetched: list[Fetched]) -> None:
        """Settles ids the lists showed inconsistently: their list rows give way to the records
        fetched one by one (an id without a record is then absent)."""
        held_ids: list[str] = []
        held_hashes: list[str] = []
        batch = PendingLines()
        for record, parent_id in fetched:
            look = first_look([record], self.held_hashes)
            held_ids.extend(look.held_ids)
            held_hashes.extend(look.held_hashes)
            batch.add(look, parent_id)
        self._replaced = pa.concat_arrays([self._replaced, pa.array(ids, pa.string())])
        if held_ids:
            held = _held_batch(held_ids, held_hashes, authoritative=True)
            with self._lock:
                self._held_batches.append(held)
        if batch.lines:
            self._type_and_keep(batch, authoritative=True)

    def finish(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, PendingLines()
        if batch.lines:
            self._type_and_keep(batch)

    def _type_and_keep(self, batch: PendingLines, *, authoritative: bool = False) -> None:
        """Types a batch of records (`typed_batch`: one path) and keeps it."""
        entity = self.entity
        assert entity.row is not None, f"{self.name} rows are not built from listed records"
        issues: list[Issue] = []
        typed = typed_batch(
            entity.contract,
            batch.lines,
            run_id=self._run_id,
            issues=issues,
            row=entity.row,
            versions=batch.versions,
            parent_column=entity.parent_column,
            parent_ids=batch.parents,
        )
        self.keep(typed, issues, authoritative=authoritative)

    def keep(
        self,
        typed: pa.Table,
        issues: list[Issue],
        *,
        rows_seen: int = 0,
        authoritative: bool = False,
    ) -> None:
        """Writes a typed batch (and the breaches its typing reported) to the spill folder and
        makes it part of the snapshot, loadable by the next delivery wave."""
        with self._lock:
            path = self._spill_dir / f"{self.name}-{self._file_number:06d}.arrow"
            self._file_number += 1
            self._issues.extend(issues)
        feather.write_feather(typed, path, compression="uncompressed")
        hashes = None
        if settings.ROW_HASH_COLUMN in typed.column_names:
            hashes = typed.column(settings.ROW_HASH_COLUMN).combine_chunks()
        batch = SpilledBatch(path, typed.column("id").combine_chunks(), hashes, authoritative)
        with self._lock:
            self._batches.append(batch)
            self.rows_seen += rows_seen

    def _not_replaced(self, batch: SpilledBatch, ids: pa.Array) -> pa.Array | None:
        """The mask of `ids` (a list batch's) not settled by `replace`, None to keep them all."""
        if batch.authoritative or len(self._replaced) == 0:
            return None
        return pc.invert(pc.is_in(ids, value_set=self._replaced))

    def _pending_held(self) -> SpilledBatch:
        """Held records not moved into a batch yet, as one."""
        return _held_batch(self._pending_held_ids, self._pending_held_hashes)

    def _sightings(self) -> list[tuple[SpilledBatch, pa.Array | None]]:
        """Every batch, held ones included, with the mask of its rows still in the snapshot."""
        every = [*self._batches, *self._held_batches, self._pending_held()]
        return [(batch, self._not_replaced(batch, batch.ids)) for batch in every]

    def versions(self) -> Walked:
        """Each id once, with the first look's decision for its version: `changes.diff`'s input."""
        versions = self._versions()
        return Walked(
            versions.column("id").combine_chunks(), versions.column("held").combine_chunks()
        )

    def _versions(self) -> pa.Table:
        """One version per id (`id`, `hash`, `held`). An entity the walk saw twice with
        different content keeps the smallest row hash: a choice that does not depend on which
        thread saw it first, so a repeat never becomes a second current row nor flips."""
        ids, hashes, held = [], [], []
        for batch, keep in self._sightings():
            kept = batch.ids if keep is None else batch.ids.filter(keep)
            ids.append(kept)
            held.append(pa.repeat(batch.held, len(kept)))
            if batch.hashes is not None:
                hashes.append(batch.hashes if keep is None else batch.hashes.filter(keep))
        all_ids = pa.concat_arrays(ids)
        all_hashes = pa.concat_arrays(hashes) if hashes else pa.array([], pa.string())
        if len(all_hashes) != len(all_ids):
            all_hashes = pa.nulls(len(all_ids), pa.string())
        versions = pa.table({"id": all_ids, "hash": all_hashes, "held": pa.concat_arrays(held)})
        if pc.count_distinct(all_ids).as_py() == len(all_ids):
            return versions
        ordered = versions.sort_by([("id", "ascending"), ("hash", "ascending")])
        ordered_ids = ordered.column("id").combine_chunks()
        later = pc.not_equal(ordered_ids.slice(1), ordered_ids.slice(0, len(ordered_ids) - 1))
        first = pa.concat_arrays([pa.array([True]), pc.fill_null(later, True)])
        return ordered.filter(first)

    def _chosen_versions(self) -> tuple[pa.Array, set[tuple[str, str]]] | None:
        """For ids seen more than once: those ids and the (id, hash) kept for each."""
        repeated = self._repeated_ids()
        if len(repeated) == 0:
            return None
        versions = self._versions()
        chosen = versions.filter(pc.is_in(versions.column("id"), value_set=repeated))
        kept = set(
            zip(chosen.column("id").to_pylist(), chosen.column("hash").to_pylist(), strict=True)
        )
        return repeated, kept

    def batches(self, only_ids: pa.Array | None = None) -> Iterator[pa.Table]:
        """Reads the spilled batches back, keeping only `only_ids` when given. An entity the
        walk saw more than once yields one row: its chosen version (see `_versions`)."""
        chosen = self._chosen_versions() if self.entity.history else None
        emitted: set[str] = set()
        for batch in self._batches:
            table = _read(batch)
            keep = self._not_replaced(batch, table.column("id"))
            if keep is not None:
                table = table.filter(keep)
            if only_ids is not None:
                table = table.filter(pc.is_in(table.column("id"), value_set=only_ids))
            if chosen is not None:
                table = _chosen_rows(table, *chosen, emitted)
            if table.num_rows:
                yield table

    def loadable_rows(self) -> int:
        """Rows typed but not handed out by `take_loadable` yet."""
        with self._lock:
            return sum(len(batch.ids) for batch in self._batches[self._taken :])

    def take_loadable(self, *, drop_repeated_ids: bool) -> Iterator[pa.Table]:
        """The spilled batches typed since the last call (deliveries load in waves). With
        `drop_repeated_ids` every id is handed out once across all calls (a log that shifts
        during the walk shows an entry on two pages; an append would load it twice)."""
        with self._lock:
            batches, self._taken = self._batches[self._taken :], len(self._batches)
        repeated = self._repeated_ids() if drop_repeated_ids and batches else None
        emitted: set[str] = set()
        if repeated is not None and len(repeated) and self._emitted:
            before = pa.chunked_array(self._emitted, pa.string())
            emitted = set(before.filter(pc.is_in(before, value_set=repeated)).to_pylist())
        for batch in batches:
            table = _read(batch)
            if repeated is not None and len(repeated):
                table = _first_sightings(table, repeated, emitted)
            if drop_repeated_ids:
                self._emitted.append(table.column("id").combine_chunks())
            if table.num_rows:
                yield table

    def _repeated_ids(self) -> pa.Array:
        """Ids still in the snapshot more than once (the walk saw them twice)."""
        sightings = self._sightings()
        ids = pa.concat_arrays([b.ids if k is None else b.ids.filter(k) for b, k in sightings])
        return repeated_ids(ids)


def _held_batch(ids: list[str], hashes: list[str], *, authoritative: bool = False) -> SpilledBatch:
    """Records the first look found held, as one batch of ids and hashes (never written)."""
    return SpilledBatch(
        None, pa.array(ids, pa.string()), pa.array(hashes, pa.string()), authoritative
    )


def _read(batch: SpilledBatch) -> pa.Table:
    """A written batch's rows, read back from the spill folder."""
    assert batch.path is not None, "held records are kept without their rows"
    return feather.read_table(batch.path, memory_map=False)


def _chosen_rows(
    table: pa.Table, repeated: pa.Array, kept: set[tuple[str, str]], emitted: set[str]
) -> pa.Table:
    """Drops the rows of repeated ids other than the one chosen version (emitted once)."""
    ids = table.column("id").to_pylist()
    hashes = table.column(settings.ROW_HASH_COLUMN).to_pylist()
    candidates = pc.is_in(table.column("id"), value_set=repeated).to_pylist()
    keep = []
    for row_id, version, candidate in zip(ids, hashes, candidates, strict=True):
        if not candidate:
            keep.append(True)
            continue
        wanted = (row_id, version) in kept and row_id not in emitted
        keep.append(wanted)
        if wanted:
            emitted.add(row_id)
    return table.filter(pa.array(keep, pa.bool_()))


def _first_sightings(table: pa.Table, repeated: pa.Array, emitted: set[str]) -> pa.Table:
    """Drops rows whose id (one of `repeated`) was already emitted, in this or a past batch."""
    ids = table.column("id").to_pylist()
    candidates = pc.is_in(table.column("id"), value_set=repeated).to_pylist()
    keep = []
    for row_id, candidate in zip(ids, candidates, strict=True):
        if candidate:
            keep.append(row_id not in emitted)
            emitted.add(row_id)
        else:
            keep.append(True)
    return table.filter(pa.array(keep, pa.bool_()))
