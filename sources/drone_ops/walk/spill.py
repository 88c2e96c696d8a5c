"""The spill store: one table's rows as a run's walk saw them, typed into Arrow batches and
written to local disk as they arrive, so memory stays flat however large the workspace.

Only ids and row hashes stay in memory: the change detection needs nothing else, and the
resources read the batches back only for what they load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather

from .. import settings
from ..exceptions import DroneOpsError, Interrupted
from ..tables.breaches import Issue
from ..tables.entities import Entity
from ..tables.lines import LineBuffer, typed_lines
from ..tables.rows import Record, line_hash, record_line, to_arrow

SPILL_PREFIX = "drone-ops-walk-"
"""Spill folders are named so a later run can find and remove those a killed run left."""


@dataclass(frozen=True)
class SpilledBatch:
    """One typed batch on local disk, with the columns the change detection needs."""

    path: Path
    ids: pa.Array
    hashes: pa.Array | None
    authoritative: bool = False
    """Rows fetched one by one to settle a conflict; they replace list rows of the same ids."""


@dataclass
class PendingLines:
    """Records of one table waiting to be typed: their JSON lines, row hashes and parents."""

    lines: LineBuffer = field(default_factory=LineBuffer)
    versions: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)


class TableSnapshot:
    """One table's rows as this run's walk saw them, spilled in typed Arrow batches."""

    def __init__(
        self,
        entity: Entity,
        spill_dir: Path,
        run_id: str,
        issues: list[Issue],
        known_versions: frozenset[str] = frozenset(),
    ) -> None:
        self.entity = entity
        self.name = entity.table
        self.known_versions = known_versions
        """Row hashes the warehouse holds as current: such records are kept as id + hash only."""
        self._unchanged_ids: list[str] = []
        self._unchanged_hashes: list[str] = []
        self._unchanged_batches: list[SpilledBatch] = []
        """Unchanged records already moved from Python lists into Arrow arrays (a quarter of
        the memory: at `large` 400,000 ids and hashes as Python strings took about 60 MB)."""
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

    def offer(self, records: list[Record], parent_id: str | None = None) -> None:
        """Adds records listed by the API (under `parent_id`). Those the warehouse already holds
        unchanged are kept as id and hash only (so a quiet run types and spills almost nothing);
        the others as JSON lines, typed and spilled in batches."""
        known = self.known_versions
        unchanged_ids: list[str] = []
        unchanged_hashes: list[str] = []
        changed: list[tuple[bytes, str]] = []
        for record in records:
            line = record_line(record)
            version = line_hash(line)
            if version in known:
                unchanged_ids.append(str(record["id"]))
                unchanged_hashes.append(version)
            else:
                changed.append((line, version))
        batch: PendingLines | None = None
        with self._lock:
            self._unchanged_ids.extend(unchanged_ids)
            self._unchanged_hashes.extend(unchanged_hashes)
            if len(self._unchanged_ids) >= settings.ARROW_BATCH_ROWS:
                self._unchanged_batches.append(self._unchanged_pending())
                self._unchanged_ids, self._unchanged_hashes = [], []
            self.rows_seen += len(records)
            pending = self._pending
            for line, version in changed:
                pending.lines.append(line)
                pending.versions.append(version)
            pending.parents.extend([parent_id] * len(changed))
            if len(pending.lines) >= settings.ARROW_BATCH_ROWS:
                batch, self._pending = pending, PendingLines()
        if batch is not None:
            self.adopt(self._spill_lines(batch))

    def finish(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, PendingLines()
        if batch.lines:
            self.adopt(self._spill_lines(batch))

    def _spill_lines(self, batch: PendingLines) -> SpilledBatch:
        return self.spill_table(lambda issues: self._typed(batch, issues))

    def _typed(self, batch: PendingLines, issues: list[Issue]) -> pa.Table:
        """The batch typed from its lines by Arrow, or, when any value needs reporting, row
        by row through the entity's row builder (`transforms.to_arrow`)."""
        entity = self.entity
        fast = typed_lines(
            entity.contract,
            batch.lines,
            versions=batch.versions,
            run_id=self._run_id,
            issues=issues,
            parent_column=entity.parent_column,
            parent_ids=batch.parents,
        )
        if fast is not None:
            return fast
        to_row = entity.row
        assert to_row is not None, f"{self.name} rows are not built from listed records"
        listed = zip(batch.lines.lines(), batch.versions, batch.parents, strict=True)
        rows = [
            to_row(orjson.loads(line), version=version, parent_id=parent)
            for line, version, parent in listed
        ]
        return to_arrow(entity.contract, rows, self._run_id, issues)

    def spill(self, rows: list[Record]) -> SpilledBatch:
        """Types and writes a batch without making it part of the snapshot yet."""
        return self.spill_table(
            lambda issues: to_arrow(self.entity.contract, rows, self._run_id, issues)
        )

    def spill_table(self, build: Callable[[list[Issue]], pa.Table]) -> SpilledBatch:
        """Writes the batch `build` types (reporting breaches into its list) to local disk."""
        issues: list[Issue] = []
        built = build(issues)
        with self._lock:
            path = self._spill_dir / f"{self.name}-{self._file_number:06d}.arrow"
            self._file_number += 1
            self._issues.extend(issues)
        feather.write_feather(built, path, compression="uncompressed")
        hashes = None
        if settings.ROW_HASH_COLUMN in built.column_names:
            hashes = built.column(settings.ROW_HASH_COLUMN).combine_chunks()
        return SpilledBatch(path, built.column("id").combine_chunks(), hashes)

    def adopt(self, batch: SpilledBatch, rows_seen: int = 0) -> None:
        """Makes a spilled batch part of the snapshot (and loadable by the next delivery wave)."""
        with self._lock:
            self._batches.append(batch)
            self.rows_seen += rows_seen

    def replace(self, ids: list[str], rows: list[Record]) -> None:
        """Settles ids the lists showed inconsistently: their list rows give way to `rows`
        (records fetched one by one); an id without a row is then simply absent."""
        self._replaced = pa.concat_arrays([self._replaced, pa.array(ids, pa.string())])
        if rows:
            batch = self.spill(rows)
            self.adopt(SpilledBatch(batch.path, batch.ids, batch.hashes, authoritative=True))

    def _keep(self, batch: SpilledBatch, ids: pa.Array) -> pa.Array | None:
        if batch.authoritative or len(self._replaced) == 0:
            return None
        return pc.invert(pc.is_in(ids, value_set=self._replaced))

    def _unchanged_pending(self) -> SpilledBatch:
        """Unchanged records as a batch of ids and hashes (never written to disk)."""
        return SpilledBatch(
            Path(),
            pa.array(self._unchanged_ids, pa.string()),
            pa.array(self._unchanged_hashes, pa.string()),
        )

    def _unchanged(self) -> list[SpilledBatch]:
        return [*self._unchanged_batches, self._unchanged_pending()]

    def _all_ids(self) -> pa.Array:
        arrays = []
        for batch in [*self._batches, *self._unchanged()]:
            keep = self._keep(batch, batch.ids)
            arrays.append(batch.ids if keep is None else batch.ids.filter(keep))
        return pa.concat_arrays(arrays)

    def _all_hashes(self) -> pa.Array:
        arrays = []
        for batch in [*self._batches, *self._unchanged()]:
            if batch.hashes is None:
                continue
            keep = self._keep(batch, batch.ids)
            arrays.append(batch.hashes if keep is None else batch.hashes.filter(keep))
        return pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())

    def versions(self) -> tuple[pa.Array, pa.Array]:
        """Each id once and its version (row hash), in the same order (see `_versions`);
        computed together so a repeated id is settled once per comparison."""
        versions = self._versions()
        return versions.column("id").combine_chunks(), versions.column("hash").combine_chunks()

    def _versions(self) -> pa.Table:
        """One version per id. An entity the walk saw twice with different content (the API
        listing one job under two projects) keeps the smallest row hash: a choice that does
        not depend on which thread saw it first, so a repeat never becomes a second current
        row and does not flip between runs."""
        ids = self._all_ids()
        hashes = self._all_hashes()
        if len(hashes) != len(ids):
            return pa.table({"id": ids, "hash": pa.nulls(len(ids), pa.string())})
        versions = pa.table({"id": ids, "hash": hashes})
        if pc.count_distinct(ids).as_py() == len(ids):
            return versions
        return (
            versions.group_by("id", use_threads=False)
            .aggregate([("hash", "min")])
            .rename_columns(["id", "hash"])
        )

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
            table = feather.read_table(batch.path, memory_map=False)
            keep = self._keep(batch, table.column("id"))
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
        """The spilled batches not handed out before, read back: deliveries load in waves while
        the walk goes on, and each call takes what was typed since the last one. With
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
            table = feather.read_table(batch.path, memory_map=False)
            if repeated is not None and len(repeated):
                table = _first_sightings(table, repeated, emitted)
            if drop_repeated_ids:
                self._emitted.append(table.column("id").combine_chunks())
            if table.num_rows:
                yield table

    def _repeated_ids(self) -> pa.Array:
        counts = pc.value_counts(self._all_ids())
        return counts.field("values").filter(pc.greater(counts.field("counts"), 1))


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
