"""The dlt source: one resource per warehouse table, all fed by one shared workspace walk.

Entity tables are scd2 with explicit change sets: only new and changed entities are loaded
(as new versions) and deleted ones arrive as tombstone rows that retire them. dlt's
`destination_scope` limits retirement to the ids in the load, so an unchanged entity is never
touched and a run with no change loads nothing at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dlt
import httpx
import pyarrow as pa
import pyarrow.compute as pc
from dlt.common.schema.typing import (
    DEFAULT_VALIDITY_COLUMN_NAMES,
    TColumnSchema,
    TDeleteInsertStrategyDict,
    TScd2StrategyDict,
)
from dlt.extract.resource import DltResource

from . import settings
from .changes import (
    ChangeSet,
    diff,
    outside_projects,
    retire_share_exceeded,
    unchanged_versions,
)
from .client import DroneOpsClient, WalkStats
from .config import checked_config, checked_tables
from .exceptions import DroneOpsError, Interrupted, MassDeleteRefused
from .report import SyncReport, TableResult
from .schema import ARROW_TYPES, dlt_columns
from .transforms import Record, entity_row, job_row, project_row, to_arrow, tombstones, user_row
from .walk import DeliveryMark, ProgressCallback, WalkPlan, WorkspaceWalk

log = logging.getLogger(__name__)

SCD2_DISPOSITION: TScd2StrategyDict = {
    "disposition": "merge",
    "strategy": "scd2",
    "row_version_column_name": settings.ROW_HASH_COLUMN,
    # tombstones reach the staging table (so their ids are in scope and get retired) but are
    # never inserted as versions
    "source_filter": f'NOT "{settings.TOMBSTONE_COLUMN}"',
    "destination_scope": '"id" IN (SELECT "id" FROM {staging_table})',
}
MERGE_ON_ID: TDeleteInsertStrategyDict = {"disposition": "merge", "strategy": "delete-insert"}
VALID_FROM, VALID_TO = DEFAULT_VALIDITY_COLUMN_NAMES
VALIDITY_TYPE = ARROW_TYPES["ts"]
# declared as the scd2 merge declares them, so a table first loaded by append is the table the
# merge would have created, and later runs merge into it
VALIDITY_COLUMNS: dict[str, TColumnSchema] = {
    name: {"data_type": "timestamp", "timezone": True, "precision": 6, "nullable": True}
    for name in DEFAULT_VALIDITY_COLUMN_NAMES
}
# Above this many deletion candidates in one table, single-record checks are skipped (the
# mass-delete guard still applies).
MAX_DELETION_CHECKS = 2_000


@dataclass
class KnownState:
    """What the warehouse holds before the run; read by the pipeline layer."""

    current: dict[str, pa.Table] = field(default_factory=dict)
    """Per entity table: `id`, `_row_hash` (and `project_id` for jobs) of current rows."""
    delivery_marks: dict[str, DeliveryMark] = field(default_factory=dict)
    users: pa.Table | None = None
    """`id`, `_row_hash` of the users table."""
    existing: set[str] = field(default_factory=set)
    """Tables the warehouse already has; the others are loaded by a plain append."""
    job_syncs: int | None = None
    """Successful `jobs` syncs so far (picks a rolling refresh's slice); None when this run
    must walk every project's jobs (no history yet, or `--full-refresh`)."""


@dataclass
class RunOptions:
    """Per-run choices that are not configuration: set by the CLI for one run."""

    run_id: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    tables: Sequence[str] = settings.ALL_TABLES
    known: KnownState = field(default_factory=KnownState)
    allow_mass_delete: bool = False
    progress: ProgressCallback | None = None
    report: SyncReport | None = None
    walk: WorkspaceWalk | None = None
    """Set by the source; the pipeline layer reads its issues and closes it."""
    transport: httpx.BaseTransport | None = None
    """Replaces the network in unit tests (httpx.MockTransport)."""
    spill_root: Path | None = None
    """Where the walk spills typed batches (default: the system temp dir); the pipeline layer
    puts it beside the pipeline's working folder, where a later run removes what a killed
    run left."""
    stop: threading.Event | None = None
    """Set (by a signal handler) to interrupt the run: unfinished tables load nothing."""


@dlt.source(name=settings.SOURCE_NAME, max_table_nesting=0)
def drone_ops(
    base_url: str = dlt.config.value,
    api_key: str = dlt.secrets.value,
    webhook_ids: list[str] | None = None,
    jobs_path: str = settings.JOBS_PATH_TEMPLATE,
    max_workers: int = settings.DEFAULT_MAX_WORKERS,
    max_requests_per_second: float | None = None,
    max_retire_share: float = settings.DEFAULT_MAX_RETIRE_SHARE,
    timeout_seconds: float = settings.DEFAULT_TIMEOUT_SECONDS,
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS,
    retry_budget_seconds: float = settings.DEFAULT_RETRY_BUDGET_SECONDS,
    job_refresh_slices: int = settings.DEFAULT_JOB_REFRESH_SLICES,
    run: Any = None,
) -> list[DltResource]:
    """Projects, jobs, job types, team, webhooks, deliveries and users of one workspace."""
    options: RunOptions = run if isinstance(run, RunOptions) else RunOptions(run_id=_new_run_id())
    config = checked_config(
        base_url=base_url,
        api_key=api_key,
        webhook_ids=webhook_ids,
        jobs_path=jobs_path,
        max_workers=max_workers,
        max_requests_per_second=max_requests_per_second,
        max_retire_share=max_retire_share,
        timeout_seconds=timeout_seconds,
        max_attempts=max_attempts,
        retry_budget_seconds=retry_budget_seconds,
        job_refresh_slices=job_refresh_slices,
    )
    jobs_path, max_workers = config.jobs_path, config.max_workers
    job_slice = _job_slice(config.job_refresh_slices, options.known)
    client = DroneOpsClient(
        config.base_url,
        config.api_key,
        max_workers=max_workers,
        timeout=config.timeout_seconds,
        max_attempts=config.max_attempts,
        retry_budget_seconds=config.retry_budget_seconds,
        max_requests_per_second=config.max_requests_per_second,
        transport=options.transport,
    )
    wanted = set(checked_tables(options.tables))
    plan = WalkPlan(
        projects="projects" in wanted or "users" in wanted,
        jobs="jobs" in wanted,
        team="team_members" in wanted,
        job_types="job_types" in wanted,
        webhooks=bool(wanted & {"webhooks", "webhook_deliveries", "users"}),
        jobs_path=jobs_path,
        webhook_ids=config.webhook_ids,
        delivery_marks=options.known.delivery_marks,
        known_versions={
            table: unchanged_versions(current) for table, current in options.known.current.items()
        },
        job_slice=job_slice,
    )
    walk = WorkspaceWalk(
        client,
        plan,
        run_id=options.run_id,
        max_workers=max_workers,
        progress=options.progress,
        spill_root=options.spill_root,
        stop=options.stop,
    )
    options.walk = walk
    report = options.report or SyncReport(options.run_id, options.started_at)
    options.report = report
    sync = _TableSync(walk, options, config.max_retire_share, jobs_path)

    # A table the warehouse does not have yet is loaded by a plain append: there is nothing
    # to merge with, and the merge's staging copy and joins cost more than the load itself.
    resources: list[DltResource] = [
        dlt.resource(
            sync.entity_rows(table),
            name=table,
            write_disposition=SCD2_DISPOSITION if table in options.known.existing else "append",
            columns={**dlt_columns(table), **VALIDITY_COLUMNS},
        )
        for table in settings.ENTITY_TABLES
        if table in wanted
    ]
    merged = {"webhook_deliveries": sync.delivery_rows, "users": sync.user_rows}
    resources += [
        dlt.resource(
            rows(),
            name=table,
            write_disposition=MERGE_ON_ID if table in options.known.existing else "append",
            primary_key="id",
            columns=dlt_columns(table),
        )
        for table, rows in merged.items()
        if table in wanted
    ]
    return resources


def _job_slice(slices: int, known: KnownState) -> tuple[int, int] | None:
    """This run's rolling-refresh slice, or None for a walk of every project's jobs."""
    if slices == 1 or known.job_syncs is None or "jobs" not in known.existing:
        return None
    return known.job_syncs % slices, slices


def _new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _rolling_scope(job_slice: tuple[int, int], walked: int, skipped: int) -> str:
    return (
        f"rolling refresh, slice {job_slice[0] + 1} of {job_slice[1]}:"
        f" jobs of {walked:,} of {walked + skipped:,} projects walked"
    )


class _TableSync:
    """Turns the walk's snapshots into what each table loads, and records the outcome."""

    def __init__(
        self, walk: WorkspaceWalk, options: RunOptions, max_retire_share: float, jobs_path: str
    ) -> None:
        self.walk = walk
        self.options = options
        self.max_retire_share = max_retire_share
        self.jobs_path = jobs_path
        assert options.report is not None
        self.report: SyncReport = options.report

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
        result, walked = self._start(table)
        snapshot = self.walk.tables[table]
        started = time.monotonic()
        try:
            if snapshot.error is not None:
                _record_failure(result, snapshot.error)
                return
            current = self.options.known.current.get(table)
            job_slice = self.walk.plan.job_slice
            if table == "jobs" and job_slice is not None and current is not None:
                skipped = self.walk.skipped_job_projects()
                current = outside_projects(current, skipped)
                walked = len(self.walk.job_walked_projects)
                result.scope = _rolling_scope(job_slice, walked, len(skipped))
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
                yield tombstones(table, changes.retire_ids)
            result.new, result.changed, result.retired = (
                changes.new,
                changes.changed,
                changes.retired,
            )
            result.status = "success"
        finally:
            self._count(result, snapshot.stats)
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
        snapshot = self.walk.tables[table]
        paths = self._single_record_paths(table, ids, current)
        if not paths:
            return [], []
        with ThreadPoolExecutor(max_workers=self.walk.max_workers) as pool:
            found = list(
                pool.map(lambda path: self.walk.fetch_one(path, snapshot.stats), paths.values())
            )
        rows: list[Record] = []
        kept: list[str] = []
        for entity_id, record in zip(paths, found, strict=True):
            if record is None:
                continue
            if table == "projects":
                rows.append(project_row(record)[0])
            elif table == "jobs":
                rows.append(job_row(record, str(record.get("project_id", ""))))
            elif table == "job_types":
                rows.append(entity_row(record))
            else:
                # the single-record shape differs from list rows (team members lack status):
                # it exists, so keep its current version rather than retire it
                kept.append(entity_id)
        return rows, kept

    def _single_record_paths(
        self, table: str, ids: list[str], current: pa.Table | None
    ) -> dict[str, str]:
        if table == "projects":
            return {i: f"{settings.PROJECTS_PATH}/{i}" for i in ids}
        if table == "job_types":
            return {i: f"{settings.JOB_TYPES_PATH}/{i}" for i in ids}
        if table == "team_members":
            return {i: f"{settings.TEAM_PATH}/{i}" for i in ids}
        if table == "jobs" and current is not None and "project_id" in current.column_names:
            candidates = current.filter(pc.is_in(current.column("id"), pa.array(ids)))
            return {
                str(job_id): f"{self.jobs_path.format(project_id=project_id)}/{job_id}"
                for job_id, project_id in zip(
                    candidates.column("id").to_pylist(),
                    candidates.column("project_id").to_pylist(),
                    strict=True,
                )
                if project_id is not None
            }
        return {}

    def delivery_rows(self) -> Iterator[pa.Table]:
        result, walked = self._start("webhook_deliveries")
        snapshot = self.walk.tables["webhook_deliveries"]
        try:
            # appended when the table is new: a repeated id (which the merge on id would
            # collapse) is dropped here instead
            appended = "webhook_deliveries" not in self.options.known.existing
            yield from snapshot.batches(drop_repeated_ids=appended)
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
            self._count(result, snapshot.stats)
            result.seconds = walked

    def user_rows(self) -> Iterator[pa.Table]:
        result, walked = self._start("users")
        blocking = [
            self.walk.tables[name].error
            for name in ("projects", "webhooks")
            if self.walk.tables[name].error is not None
        ]
        if blocking:
            _record_failure(result, blocking[0], prefix="creators incomplete: ")
            return
        rows = [
            user_row(seen.creator, seen.first_ms, seen.last_ms)
            for seen in self.walk.creators.values()
        ]
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
            yield to_arrow("users", rows, self.options.run_id, self.walk.issues)
        result.status = "success"
        result.seconds = walked


def _record_failure(result: TableResult, error: DroneOpsError | None, prefix: str = "") -> None:
    """A table that loads nothing this run: interrupted by a signal, or failed with a cause."""
    result.status = "interrupted" if isinstance(error, Interrupted) else "failed"
    result.error = f"{result.table}: {prefix}{error or type(error).__name__}"
