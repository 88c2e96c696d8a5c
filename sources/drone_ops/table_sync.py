"""What each table loads this run: the walk's snapshot compared with the warehouse.

History tables get explicit change sets: only new and changed entities are loaded (as new
versions), and deleted ones arrive as tombstone rows that retire them, once a single-record
check confirms each deletion and the mass-delete guard lets the table through. Deliveries and
users hold one row per id. Every outcome is recorded in the run's `SyncReport`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
from dlt.common.schema.typing import DEFAULT_VALIDITY_COLUMN_NAMES

from . import settings
from .changes import ChangeSet, diff, retire_share_exceeded
from .entities import ENTITIES, JOBS, USERS, Entity
from .exceptions import DroneOpsError, Interrupted, MassDeleteRefused
from .report import SyncReport, TableResult
from .rolling import outside_projects, rolling_scope
from .run import RunOptions
from .schema import ARROW_TYPES
from .transforms import Record, to_arrow, tombstones, user_row
from .walk import WalkStats, WorkspaceWalk

log = logging.getLogger(__name__)

VALID_FROM, VALID_TO = DEFAULT_VALIDITY_COLUMN_NAMES
VALIDITY_TYPE = ARROW_TYPES["ts"]
# Above this many deletion candidates in one table, single-record checks are skipped (the
# mass-delete guard still applies).
MAX_DELETION_CHECKS = 2_000


class TableSync:
    """Turns the walk's snapshots into what each table loads, and records the outcome."""

    def __init__(self, walk: WorkspaceWalk, run: RunOptions, max_retire_share: float) -> None:
        self.walk = walk
        self.options = run
        self.max_retire_share = max_retire_share
        assert run.report is not None, "RunOptions always carries a report"
        self.report: SyncReport = run.report

    def _start(self, table: str) -> tuple[TableResult, float]:
        """Waits for the walks this table depends on; returns its result and their seconds."""
        seconds = self.walk.wait(table)
        return self.report.table(table), seconds

    def _first_versions(self, batch: pa.Table) -> pa.Table:
        """What the scd2 merge would have written for a first version: valid from the run."""
        valid_from = pa.array([self.options.started_at] * batch.num_rows, VALIDITY_TYPE)
        batch = batch.append_column(VALID_FROM, valid_from)
        return batch.append_column(VALID_TO, pa.nulls(batch.num_rows, VALIDITY_TYPE))

    @staticmethod
    def _count(result: TableResult, stats: WalkStats) -> None:
        result.requests += stats.requests
        result.pages += stats.pages
        result.retries += stats.retries

    def entity_rows(self, table: str) -> Iterator[pa.Table]:
        """New and changed versions of a history table, then tombstones for what is gone."""
        result, walked = self._start(table)
        snapshot = self.walk.tables[table]
        started = time.monotonic()
        try:
            if snapshot.error is not None:
                _record_failure(result, snapshot.error)
                return
            current = self.options.known.current.get(table)
            job_slice = self.walk.plan.job_slice
            if table == JOBS.table and job_slice is not None and current is not None:
                skipped = self.walk.skipped_job_projects()
                current = outside_projects(current, skipped)
                result.scope = rolling_scope(
                    job_slice, len(self.walk.job_walked_projects), len(skipped)
                )
            try:
                conflicts = sorted(self.walk.conflicts.get(table, ()))
                if conflicts:
                    snapshot.replace(conflicts, self._fetch_rows(table, conflicts, current)[0])
                changes = diff(*snapshot.versions(), current)
                if changes.retire_ids and len(changes.retire_ids) <= MAX_DELETION_CHECKS:
                    changes = self._confirm_deletions(table, changes, current)
            except DroneOpsError as exc:
                # a single-record check that keeps failing fails this table, not its group
                _record_failure(result, exc, prefix="checking records one by one: ")
                return
            result.rows_seen = snapshot.rows_seen
            if not self.options.allow_mass_delete and retire_share_exceeded(
                changes, self.max_retire_share
            ):
                refused = MassDeleteRefused(
                    table, changes.retired, changes.current, self.max_retire_share
                )
                log.error("%s", refused)
                result.status = "refused"
                result.error = str(refused)
                return
            if changes.new or changes.changed:
                only = None if changes.current == 0 else changes.load_ids
                if table in self.options.known.existing:
                    yield from snapshot.batches(only)
                else:
                    yield from map(self._first_versions, snapshot.batches(only))
            if changes.retire_ids:
                yield tombstones(ENTITIES[table].contract, changes.retire_ids)
            result.new, result.changed, result.retired = (
                changes.new,
                changes.changed,
                changes.retired,
            )
            result.status = "success"
        finally:
            self._count(result, self.walk.stats[table])
            result.seconds = walked + time.monotonic() - started

    def _confirm_deletions(
        self, table: str, changes: ChangeSet, current: pa.Table | None
    ) -> ChangeSet:
        """Asks for each deletion candidate by id: a list can miss a row that moved mid-walk
        (a project archived between the two project lists); only a 404 confirms a deletion."""
        snapshot = self.walk.tables[table]
        rows, kept = self._fetch_rows(table, changes.retire_ids, current)
        if rows:
            snapshot.replace([str(row["id"]) for row in rows], rows)
            changes = diff(*snapshot.versions(), current)
        if kept:
            keep = set(kept)
            changes = ChangeSet(
                changes.load_ids,
                changes.new,
                changes.changed,
                [i for i in changes.retire_ids if i not in keep],
                changes.current,
            )
        return changes

    def _fetch_rows(
        self, table: str, ids: list[str], current: pa.Table | None
    ) -> tuple[list[Record], list[str]]:
        """Fetches entities one by one: rows for those that exist, plus the ids that exist
        but whose single-record shape cannot stand in for a list row (team members)."""
        entity = ENTITIES[table]
        stats = self.walk.stats[table]
        paths = self._single_record_paths(entity, ids, current)
        if not paths:
            return [], []
        with ThreadPoolExecutor(max_workers=self.walk.max_workers) as pool:
            found = list(
                pool.map(lambda path: self.walk.client.get_record(path, stats), paths.values())
            )
        rows: list[Record] = []
        kept: list[str] = []
        for entity_id, record in zip(paths, found, strict=True):
            if record is None:
                continue
            if entity.record_replaces_row and entity.row is not None:
                parent = entity.parent_column
                parent_id = str(record.get(parent, "")) if parent is not None else None
                rows.append(entity.row(record, parent_id=parent_id))
            else:
                # the single-record shape differs from list rows (team members lack status):
                # it exists, so keep its current version rather than retire it
                kept.append(entity_id)
        return rows, kept

    def _single_record_paths(
        self, entity: Entity, ids: list[str], current: pa.Table | None
    ) -> dict[str, str]:
        """Where to ask for each id; a record listed under a parent (a job) is found under the
        parent the warehouse knows for it."""
        if entity.record_path is None:
            return {}
        if entity.parent_column is None:
            return {i: entity.record_path.format(id=i) for i in ids}
        if current is None or entity.parent_column not in current.column_names:
            return {}
        list_path = self.walk.plan.jobs_path if entity is JOBS else str(entity.list_path)
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

    def delivery_wave(self) -> Iterator[pa.Table]:
        """The deliveries typed since the last load: a wave while the chains still walk, or
        the last ones after they ended."""
        # appended when the table is new: a repeated id (which the merge on id would collapse)
        # is dropped here instead
        appended = "webhook_deliveries" not in self.options.known.existing
        snapshot = self.walk.tables["webhook_deliveries"]
        yield from snapshot.take_loadable(drop_repeated_ids=appended)

    def delivery_rows(self) -> Iterator[pa.Table]:
        """The last deliveries once every chain is done (earlier waves loaded the rest), and
        the table's outcome."""
        result, walked = self._start("webhook_deliveries")
        snapshot = self.walk.tables["webhook_deliveries"]
        try:
            yield from self.delivery_wave()
            result.rows_seen = result.new = snapshot.rows_seen
            failures = self.walk.delivery_failures
            if snapshot.error is not None or failures:
                errors = [str(snapshot.error)] if snapshot.error else []
                errors += [f"webhook {hook}: {exc}" for hook, exc in sorted(failures.items())]
                interrupted = isinstance(snapshot.error, Interrupted) or any(
                    isinstance(exc, Interrupted) for exc in failures.values()
                )
                result.status = "interrupted" if interrupted else "failed"
                result.error = f"{result.table}: " + "; ".join(dict.fromkeys(errors))
            else:
                result.status = "success"
        finally:
            self._count(result, self.walk.stats["webhook_deliveries"])
            result.seconds = walked

    def user_rows(self) -> Iterator[pa.Table]:
        result, walked = self._start("users")
        blocking = [
            self.walk.tables[name].error
            for name in USERS.made_from
            if self.walk.tables[name].error is not None
        ]
        if blocking:
            _record_failure(result, blocking[0], prefix="creators incomplete: ")
            return
        rows = [user_row(seen.creator, seen.first_ms, seen.last_ms) for seen in self.walk.creators]
        known = self.options.known.users
        if known is not None and rows:
            unchanged = set(known.column(settings.ROW_HASH_COLUMN).to_pylist())
            known_ids = set(known.column("id").to_pylist())
            result.changed = sum(
                1
                for r in rows
                if r["id"] in known_ids and r[settings.ROW_HASH_COLUMN] not in unchanged
            )
            rows = [r for r in rows if r[settings.ROW_HASH_COLUMN] not in unchanged]
            result.new = len(rows) - result.changed
        else:
            result.new = len(rows)
        result.rows_seen = len(self.walk.creators)
        if rows:
            yield to_arrow(USERS.contract, rows, self.options.run_id, self.walk.issues)
        result.status = "success"
        result.seconds = walked


def _record_failure(result: TableResult, error: DroneOpsError | None, prefix: str = "") -> None:
    """A table that loads nothing this run: interrupted by a signal, or failed with a cause."""
    result.status = "interrupted" if isinstance(error, Interrupted) else "failed"
    result.error = f"{result.table}: {prefix}{error or type(error).__name__}"
