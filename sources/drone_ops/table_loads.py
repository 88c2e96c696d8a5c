"""What each table loads this run: the walk's snapshot compared with the warehouse.

History tables load only new and changed entities (as new versions), and tombstone rows that
retire the ones `deletions.py` lets go; deliveries and users hold one row per id. Every
outcome is recorded in the run's `SyncReport`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.schema.typing import DEFAULT_VALIDITY_COLUMN_NAMES

from . import settings
from .compare.changes import ChangeSet, diff
from .compare.deletions import (
    confirm_deletions,
    fetch_records,
    mass_delete_refusal,
    outside_projects,
    tombstones,
)
from .events import drop_older_versions
from .exceptions import DroneOpsError, Interrupted
from .known import KnownState, held_versions
from .report import TableResult
from .run import SyncRun
from .tables.entities import ENTITIES, JOBS, PROJECTS, USERS
from .tables.lines import typed_records
from .tables.rows import built_row, user_row
from .tables.schema import ARROW_TYPES
from .walk import WalkStats, WorkspaceWalk
from .walk.rolling import rolling_scope

log = logging.getLogger(__name__)

VALID_FROM, VALID_TO = DEFAULT_VALIDITY_COLUMN_NAMES
VALIDITY_TYPE = ARROW_TYPES["ts"]


class TableLoads:
    """Turns the walk's snapshots into what each table loads, and records the outcome."""

    def __init__(self, run: SyncRun) -> None:
        self.run = run

    @property
    def walk(self) -> WorkspaceWalk:
        assert self.run.walk is not None, "tables read the walk only once the run is open"
        return self.run.walk

    def _start(self, table: str) -> tuple[TableResult, float]:
        """Waits for the walks this table depends on; returns its result and their seconds."""
        seconds = self.walk.wait(table)
        return self.run.report.table(table), seconds

    def _first_versions(self, batch: pa.Table) -> pa.Table:
        """What the scd2 merge would have written for a first version: valid from the run."""
        valid_from = pa.array([self.run.started_at] * batch.num_rows, VALIDITY_TYPE)
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
            changes = self._decided(table)
            if changes is None:
                return
            known = self._known()
            kept_back: list[str] = []
            if changes.new or changes.changed:
                only = None if changes.current == 0 else changes.load_ids
                if table == PROJECTS.table and table in known.existing:
                    batches = snapshot.batches(only)
                    yield from _not_older(batches, self.run.started_at, kept_back)
                elif table in known.existing:
                    yield from snapshot.batches(only)
                else:
                    yield from map(self._first_versions, snapshot.batches(only))
            if changes.retire_ids:
                yield tombstones(ENTITIES[table].contract, changes.retire_ids)
            held_before = _held_before(known.current.get(table), kept_back)
            result.new = changes.new - (len(kept_back) - held_before)
            result.changed = changes.changed - held_before
            result.retired = changes.retired
            result.succeed()
        finally:
            self._count(result, self.walk.stats[table])
            result.seconds = walked + time.monotonic() - started

    def _decided(self, table: str) -> ChangeSet | None:
        """The table's change set, compared once per run (`SyncRun.decided`), whoever asks
        first: the table's extract, or `loads_nothing` before it."""
        decided = self.run.decided
        if table not in decided:
            decided[table] = self._decide(table)
        return decided[table]

    def _decide(self, table: str) -> ChangeSet | None:
        """The walked snapshot compared with the warehouse, deletions confirmed and the
        mass-delete guard asked; None, the outcome recorded, when the table loads nothing."""
        result = self.run.report.table(table)
        snapshot = self.walk.tables[table]
        if snapshot.error is not None:
            _record_failure(result, snapshot.error)
            return None
        current = self._known().current.get(table)
        job_slice = self.walk.plan.job_slice
        if table == JOBS.table and job_slice is not None and current is not None:
            skipped = self.walk.projects.skipped_job_projects()
            current = outside_projects(current, skipped)
            result.scope = rolling_scope(
                job_slice, len(self.walk.projects.job_walked_projects), len(skipped)
            )
        try:
            changes = self._compare(table, current)
        except DroneOpsError as exc:
            # a single-record check that keeps failing fails this table, not its group
            _record_failure(result, exc, prefix="checking records one by one: ")
            return None
        result.rows_seen = snapshot.rows_seen
        refused = mass_delete_refusal(
            table,
            changes,
            self.run.config.max_retire_share,
            allowed=self.run.options.allow_mass_delete,
        )
        if refused is not None:
            log.error("%s", refused)
            result.refuse(str(refused))
            return None
        return changes

    def loads_nothing(self, tables: Sequence[str]) -> bool:
        """Whether none of `tables` has anything to load this run, each asked once its walk is
        done, in load order; a failed walk is left to the extract, which raises it."""
        try:
            return all(self._loads_nothing(table) for table in tables)
        except DroneOpsError:
            return False

    def _loads_nothing(self, table: str) -> bool:
        self.walk.wait(table)
        if table == "webhook_deliveries":
            return self.walk.tables[table].loadable_rows() == 0
        if table == USERS.table:
            return self._held_back_by() is not None or not self._users()[0]
        changes = self._decided(table)
        return changes is None or not (changes.new or changes.changed or changes.retire_ids)

    def finish_unloaded(self, tables: Sequence[str]) -> None:
        """Runs each table's rows, which `loads_nothing` found empty, to their end outside
        dlt, so each outcome is recorded in the report as its extract would have."""
        rows = {"webhook_deliveries": self.delivery_rows, USERS.table: self.user_rows}
        for table in tables:
            for _ in rows[table]() if table in rows else self.entity_rows(table):
                raise DroneOpsError(f"{table} had rows to load after all")

    def _compare(self, table: str, current: pa.Table | None) -> ChangeSet:
        """The walked snapshot against the warehouse's current rows, deletions confirmed."""
        snapshot = self.walk.tables[table]
        entity = ENTITIES[table]
        list_path = self.run.config.jobs_path if entity is JOBS else str(entity.list_path)
        conflicts = sorted(self.walk.projects.conflicts) if table == "projects" else []
        if conflicts:
            found, _ = fetch_records(table, conflicts, current, self.walk.lookup_records, list_path)
            snapshot.replace(conflicts, found)
        return confirm_deletions(
            table,
            diff(snapshot.versions(), current),
            current,
            lookup=self.walk.lookup_records,
            versions=snapshot.versions,
            replace=snapshot.replace,
            list_path=list_path,
        )

    def _known(self) -> KnownState:
        assert self.run.known is not None, "tables read what is known once the run is open"
        return self.run.known

    def delivery_wave(self) -> Iterator[pa.Table]:
        """The deliveries typed since the last load: a wave while the chains still walk, or
        the last ones after they ended."""
        # appended when the table is new: a repeated id (which the merge on id would collapse)
        # is dropped here instead
        appended = "webhook_deliveries" not in self._known().existing
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
            failures = self.walk.webhooks.failures
            if snapshot.error is not None or failures:
                errors = [str(snapshot.error)] if snapshot.error else []
                errors += [f"webhook {hook}: {exc}" for hook, exc in sorted(failures.items())]
                interrupted = isinstance(snapshot.error, Interrupted) or any(
                    isinstance(exc, Interrupted) for exc in failures.values()
                )
                result.fail("; ".join(dict.fromkeys(errors)), interrupted=interrupted)
            else:
                result.succeed()
        finally:
            self._count(result, self.walk.stats["webhook_deliveries"])
            result.seconds = walked

    def user_rows(self) -> Iterator[pa.Table]:
        """Users from the creators of projects and webhooks, unless one of those loads
        nothing this run (`_held_back_by`)."""
        result, walked = self._start("users")
        blocking = self._held_back_by()
        if blocking is not None:
            _record_failure(result, blocking, prefix="creators incomplete: ")
            result.seconds = walked
            return
        rows, result.changed = self._users()
        result.new = len(rows) - result.changed
        result.rows_seen = len(self.walk.context.creators)
        if rows:
            yield typed_records(
                USERS.contract, rows, run_id=self.run.run_id, issues=self.walk.issues, row=built_row
            )
        result.succeed()
        result.seconds = walked

    def _users(self) -> tuple[list[dict[str, Any]], int]:
        """The users rows to load (new, or changed since the warehouse's) and how many of them
        are changed: one row per creator seen in this run's walk."""
        creators = self.walk.context.creators
        rows = [user_row(seen.creator, seen.first_ms, seen.last_ms) for seen in creators]
        known = self._known().users
        if known is None or not rows:
            return rows, 0
        unchanged = set(known.column(settings.ROW_HASH_COLUMN).to_pylist())
        known_ids = set(known.column("id").to_pylist())
        rows = [r for r in rows if r[settings.ROW_HASH_COLUMN] not in unchanged]
        return rows, sum(1 for r in rows if r["id"] in known_ids)

    def _held_back_by(self) -> DroneOpsError | None:
        """Why users may not load this run, if a table they are made from loads nothing (its
        walk failed, or it was refused or failed after it): users recomputed from it would
        disagree with what the warehouse keeps of it; they load with it next time."""
        for name in USERS.made_from:
            error = self.walk.tables[name].error
            if error is not None:
                return error
        for name in USERS.made_from:
            made_from = self.run.report.tables.get(name)
            if made_from is not None and made_from.status in ("refused", "failed"):
                # the table's own error (which names the endpoint or the guard) says why
                return DroneOpsError(
                    f"{name} was {made_from.status} this run ({made_from.error}), so users (made"
                    f" from its creators) load nothing either; they load with {name} on the next"
                    " run that loads it"
                )
        return None


def _record_failure(result: TableResult, error: DroneOpsError | None, prefix: str = "") -> None:
    """A table that loads nothing this run: interrupted by a signal, or failed with a cause."""
    interrupted = isinstance(error, Interrupted)
    result.fail(f"{prefix}{error or type(error).__name__}", interrupted=interrupted)


def _not_older(
    batches: Iterator[pa.Table], run_started: datetime, kept_back: list[str]
) -> Iterator[pa.Table]:
    """The API's project versions, except where an event applied while this run walked
    landed a newer one: a version the warehouse held when the run started is replaced by the
    listing's, but one written since and newer than the listing's stays (the next run compares
    with it). Read through the pipeline dlt is running, in the write lock the event applier
    writes in. The ids kept back are added to `kept_back`, so the report counts only what is
    written."""
    pipeline = dlt.current.pipeline()
    for batch in batches:
        ids = batch.column("id").to_pylist()
        with pipeline.sql_client() as client:
            held = held_versions(client, ids, written_since=run_started)
        kept = drop_older_versions(batch, held)
        if kept.num_rows < batch.num_rows:
            written = set(kept.column("id").to_pylist())
            kept_back.extend(str(i) for i in ids if i not in written)
        if kept.num_rows:
            yield kept


def _held_before(current: pa.Table | None, ids: Sequence[str]) -> int:
    """How many of `ids` the warehouse held as current when the run started (counted as
    changed, the others as new)."""
    if not ids or current is None:
        return 0
    held = set(current.column("id").to_pylist())
    return sum(1 for i in ids if i in held)
