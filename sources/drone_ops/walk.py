"""The concurrent walk of a workspace: every list the run needs, fetched once, spilled to disk.

Why a walk before any row is handed to dlt: a table may only retire rows after the walk that
should have contained them finished every page, and the mass-delete guard must be able to
refuse a table before anything of it is loaded. So each table's rows are typed into Arrow
batches as pages arrive and spilled to local Arrow files (memory stays flat), and the resources
decide afterwards what to load.

Project pages feed the per-project job walks as they arrive, so the sequential project cursor
and the parallel job walks overlap.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather

from . import settings
from .changes import job_slice_of
from .client import DroneOpsClient, WalkStats
from .exceptions import DroneOpsError, Interrupted, NotFoundError
from .transforms import (
    Issue,
    Record,
    delivery_table,
    entity_row,
    job_row,
    project_row,
    row_hash,
    to_arrow,
    webhook_row,
)

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, int], None]

LISTS, WEBHOOKS = "lists", "webhooks"
SPILL_PREFIX = "drone-ops-walk-"
"""Spill folders are named so a later run can find and remove those a killed run left."""
TABLE_STAGES: dict[str, tuple[str, ...]] = {
    "projects": (LISTS,),
    "jobs": (LISTS,),
    "job_types": (LISTS,),
    "team_members": (LISTS,),
    "webhooks": (WEBHOOKS,),
    "webhook_deliveries": (WEBHOOKS,),
    # creators come from projects and webhooks
    "users": (LISTS, WEBHOOKS),
}
"""The walk finishes in two stages: the lists, then the (long, sequential) delivery logs."""


@dataclass
class DeliveryMark:
    """What the warehouse already holds of one webhook's delivery log."""

    stop_before_ms: int
    """Entries older than this are loaded already; the walk stops when it reaches them."""
    known_ids: frozenset[str] = frozenset()
    """Ids loaded at or after `stop_before_ms` (the overlap window), skipped when seen again."""


@dataclass
class CreatorSeen:
    """A `created_by` object and the span of `created` times of what it created."""

    creator: Record
    first_ms: int | None
    last_ms: int | None


@dataclass(frozen=True)
class SpilledBatch:
    """One typed batch on local disk, with the columns the change detection needs."""

    path: Path
    ids: pa.Array
    hashes: pa.Array | None
    authoritative: bool = False
    """Rows fetched one by one to settle a conflict; they replace list rows of the same ids."""


class TableSnapshot:
    """One table's rows as this run's walk saw them, spilled in typed Arrow batches."""

    def __init__(
        self,
        name: str,
        spill_dir: Path,
        run_id: str,
        issues: list[Issue],
        known_versions: frozenset[str] = frozenset(),
    ) -> None:
        self.name = name
        self.known_versions = known_versions
        """Row hashes the warehouse holds as current: such records are kept as id + hash only."""
        self._unchanged_ids: list[str] = []
        self._unchanged_hashes: list[str] = []
        self.stats = WalkStats()
        self.error: DroneOpsError | None = None
        self.rows_seen = 0
        self._spill_dir = spill_dir
        self._run_id = run_id
        self._issues = issues
        self._pending: list[Record] = []
        self._batches: list[SpilledBatch] = []
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

    def add(self, rows: list[Record]) -> None:
        """Buffers rows; converts and spills a batch once enough have arrived."""
        batch: list[Record] | None = None
        with self._lock:
            self._pending.extend(rows)
            self.rows_seen += len(rows)
            if len(self._pending) >= settings.ARROW_BATCH_ROWS:
                batch, self._pending = self._pending, []
        if batch:
            self.adopt([self.spill(batch)])

    def offer(self, records: list[Record], to_row: Callable[[Record, str], Record]) -> None:
        """Adds records, building full rows only for those the warehouse does not already hold
        unchanged (so a quiet run types and spills almost nothing)."""
        rows: list[Record] = []
        ids: list[str] = []
        hashes: list[str] = []
        known = self.known_versions
        for record in records:
            version = row_hash(record)
            if version in known:
                ids.append(str(record["id"]))
                hashes.append(version)
            else:
                rows.append(to_row(record, version))
        if ids:
            with self._lock:
                self._unchanged_ids.extend(ids)
                self._unchanged_hashes.extend(hashes)
                self.rows_seen += len(ids)
        self.add(rows)

    def finish(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self.adopt([self.spill(batch)])

    def spill(self, rows: list[Record]) -> SpilledBatch:
        """Types and writes a batch without making it part of the snapshot yet."""
        return self.spill_table(lambda issues: to_arrow(self.name, rows, self._run_id, issues))

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

    def adopt(self, batches: list[SpilledBatch], rows_seen: int = 0) -> None:
        """Makes spilled batches part of the snapshot (all of a walk's, or none)."""
        with self._lock:
            self._batches.extend(batches)
            self.rows_seen += rows_seen

    def replace(self, ids: list[str], rows: list[Record]) -> None:
        """Settles ids the lists showed inconsistently: their list rows give way to `rows`
        (records fetched one by one); an id without a row is then simply absent."""
        self._replaced = pa.concat_arrays([self._replaced, pa.array(ids, pa.string())])
        if rows:
            batch = self.spill(rows)
            self.adopt([SpilledBatch(batch.path, batch.ids, batch.hashes, authoritative=True)])

    def _keep(self, batch: SpilledBatch, ids: pa.Array) -> pa.Array | None:
        if batch.authoritative or len(self._replaced) == 0:
            return None
        return pc.invert(pc.is_in(ids, value_set=self._replaced))

    def _unchanged(self) -> SpilledBatch:
        """The unchanged records as a batch of ids and hashes (never read back from disk)."""
        return SpilledBatch(
            Path(),
            pa.array(self._unchanged_ids, pa.string()),
            pa.array(self._unchanged_hashes, pa.string()),
        )

    def _all_ids(self) -> pa.Array:
        arrays = []
        for batch in [*self._batches, self._unchanged()]:
            keep = self._keep(batch, batch.ids)
            arrays.append(batch.ids if keep is None else batch.ids.filter(keep))
        return pa.concat_arrays(arrays)

    def _all_hashes(self) -> pa.Array:
        arrays = []
        for batch in [*self._batches, self._unchanged()]:
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

    def batches(
        self, only_ids: pa.Array | None = None, *, drop_repeated_ids: bool = False
    ) -> Iterator[pa.Table]:
        """Reads the spilled batches back, keeping only `only_ids` when given. An id the walk
        saw more than once yields one row: the chosen version (see `_versions`) of an entity,
        the first sighting of a delivery (when `drop_repeated_ids`)."""
        chosen = self._chosen_versions() if self.name != "webhook_deliveries" else None
        repeated = self._repeated_ids() if drop_repeated_ids and chosen is None else None
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
            elif repeated is not None and len(repeated):
                table = _first_sightings(table, repeated, emitted)
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


@dataclass
class WalkPlan:
    """Which parts of the workspace a run needs, and how to reach them."""

    projects: bool = False
    jobs: bool = False
    team: bool = False
    job_types: bool = False
    webhooks: bool = False
    jobs_path: str = settings.JOBS_PATH_TEMPLATE
    webhook_ids: tuple[str, ...] | None = None
    delivery_marks: dict[str, DeliveryMark] = field(default_factory=dict)
    known_versions: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per entity table, the row hashes the warehouse holds as current."""
    job_slice: tuple[int, int] | None = None
    """(slice, slices) for a rolling job refresh; None walks every project's jobs."""


class WorkspaceWalk:
    """Runs a `WalkPlan` with bounded concurrency and keeps every table's snapshot."""

    def __init__(
        self,
        client: DroneOpsClient,
        plan: WalkPlan,
        *,
        run_id: str,
        max_workers: int,
        progress: ProgressCallback | None = None,
        spill_root: Path | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.client = client
        self.plan = plan
        self.run_id = run_id
        self.max_workers = max(1, max_workers)
        self.progress = progress
        self.issues: list[Issue] = []
        self._stop = stop
        """Set from outside (a signal) to interrupt the walk."""
        if spill_root is not None:
            spill_root.mkdir(parents=True, exist_ok=True)
        self._tmp = tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=spill_root)
        spill = Path(self._tmp.name)
        self.tables = {
            name: TableSnapshot(
                name, spill, run_id, self.issues, plan.known_versions.get(name, frozenset())
            )
            for name in (*settings.ENTITY_TABLES, "webhook_deliveries")
        }
        self.creators: dict[str, CreatorSeen] = {}
        self.conflicts: dict[str, set[str]] = {}
        """Per table, ids the walk saw twice (a project archived between the two lists)."""
        self._project_ids: set[str] = set()
        self._project_ids_lock = threading.Lock()
        self.job_walked_projects: set[str] = set()
        """On a rolling refresh, the projects whose jobs this run walked (an exact run walks
        every project's, once, at its first sighting, and does not keep this set)."""
        self.completed_webhooks: set[str] = set()
        self.delivery_failures: dict[str, DroneOpsError] = {}
        self._run_lock = threading.Lock()
        self._creators_lock = threading.Lock()
        self._futures: dict[str, deque[Future[None]]] = {LISTS: deque(), WEBHOOKS: deque()}
        self._futures_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._stage_done = {LISTS: threading.Event(), WEBHOOKS: threading.Event()}
        self._stage_seconds: dict[str, float] = {}
        self._failure: BaseException | None = None
        self._cancel = threading.Event()
        self.interrupted_webhooks = False

    def close(self) -> None:
        """Stops a walk still under way (each loop ends after its current request), then
        removes the spill files."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        self._tmp.cleanup()

    def start(self) -> None:
        """Starts the walk in the background once; every resource of a run shares it."""
        with self._run_lock:
            if self._thread is None:
                self._started = time.monotonic()
                self._thread = threading.Thread(
                    target=self._run, name="drone-ops-walk", daemon=True
                )
                self._thread.start()

    def wait(self, table: str) -> float:
        """Blocks until the walks `table` depends on have finished; returns their seconds.

        The list tables finish long before the delivery-log chains, so the pipeline can
        load them while the chains are still walking."""
        self.start()
        stages = TABLE_STAGES[table]
        for stage in stages:
            while not self._stage_done[stage].wait(0.1):
                if self._stop is not None and self._stop.is_set():
                    self.interrupt()
        if self._failure is not None:
            raise DroneOpsError(
                f"the workspace walk failed: {type(self._failure).__name__}: {self._failure}"
            ) from self._failure
        return max(self._stage_seconds.get(stage, 0.0) for stage in stages)

    def interrupt(self) -> None:
        """Stops the walk now: requests in flight are abandoned, and every table whose walk
        had not finished is marked `Interrupted`, so nothing partial of it is loaded."""
        self._cancel.set()
        self.client.cancel()
        for stage, done in self._stage_done.items():
            if done.is_set():
                continue
            for table, stages in TABLE_STAGES.items():
                if stage in stages and table in self.tables:
                    self.tables[table].interrupt()
            if stage == WEBHOOKS:
                self.interrupted_webhooks = True
            done.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise Interrupted("the walk")

    def _run(self) -> None:
        try:
            # project walks hold a thread each while feeding job walks, so the pool is larger
            # than the in-flight request limit, which the client's limiter enforces;
            # spills get their own pool: a walk thread waits for its spills, and waiting on
            # work queued behind itself in the same pool could deadlock
            with (
                ThreadPoolExecutor(
                    max_workers=self.max_workers + 4, thread_name_prefix="drone-ops"
                ) as pool,
                ThreadPoolExecutor(max_workers=2, thread_name_prefix="drone-ops-spill") as spills,
            ):
                self._pool = pool
                self._spill_pool = spills
                if self.plan.projects or self.plan.jobs:
                    self._submit(LISTS, self._walk_projects, {})
                    self._submit(LISTS, self._walk_projects, {"archived": "true"})
                if self.plan.team:
                    self._submit(LISTS, self._walk_list, "team_members", settings.TEAM_PATH, "team")
                if self.plan.job_types:
                    self._submit(
                        LISTS, self._walk_list, "job_types", settings.JOB_TYPES_PATH, "job_types"
                    )
                if self.plan.webhooks:
                    self._submit(WEBHOOKS, self._walk_webhooks)
                for stage in (LISTS, WEBHOOKS):
                    self._finish_stage(stage)
        except BaseException as exc:  # surfaced by wait(); the run fails with it
            self._failure = exc
        finally:
            for done in self._stage_done.values():
                done.set()

    def _submit(self, stage: str, fn: Callable[..., None], *args: Any) -> None:
        future = self._pool.submit(fn, *args)
        with self._futures_lock:
            self._futures[stage].append(future)

    def _finish_stage(self, stage: str) -> None:
        """Waits for every walk of a stage (including those its walks queued meanwhile)."""
        queue = self._futures[stage]
        while True:
            with self._futures_lock:
                if not queue:
                    break
                future = queue[0]
            future.result()
            with self._futures_lock:
                queue.popleft()
        for table, stages in TABLE_STAGES.items():
            if stages == (stage,) and table in self.tables:
                self.tables[table].finish()
        self._stage_seconds[stage] = time.monotonic() - self._started
        self._stage_done[stage].set()

    def _report(self, table: str, rows: int) -> None:
        if self.progress is not None and rows:
            self.progress(table, rows)

    def _remember_creator(self, creator: Any, created: Any) -> None:
        """Tracks each creator's span of `created`; the newest record's copy of the creator wins,
        so the result does not depend on which thread got there first. A missing creator, or
        one without an id, is not a user."""
        if not isinstance(creator, dict) or creator.get("id") is None:
            return
        created_ms = created if isinstance(created, int) and not isinstance(created, bool) else None
        with self._creators_lock:
            seen = self.creators.get(str(creator["id"]))
            if seen is None:
                self.creators[str(creator["id"])] = CreatorSeen(creator, created_ms, created_ms)
                return
            if created_ms is None:
                return
            if seen.last_ms is None or created_ms > seen.last_ms:
                seen.creator, seen.last_ms = creator, created_ms
            elif created_ms == seen.last_ms and row_hash(creator) > row_hash(seen.creator):
                seen.creator = creator
            if seen.first_ms is None or created_ms < seen.first_ms:
                seen.first_ms = created_ms

    def _walk_projects(self, params: dict[str, str]) -> None:
        projects = self.tables["projects"]
        jobs = self.tables["jobs"]
        try:
            for page in self.client.paginate(
                settings.PROJECTS_PATH,
                params=params,
                stats=projects.stats,
                critical=True,
                items_key="projects",
            ):
                self._check_cancelled()
                records = []
                for record in _items(page, "projects", settings.PROJECTS_PATH):
                    first = self._first_sighting(str(record["id"]))
                    # a rolling run may skip a project's first sighting and still owe a walk
                    # to its second, changed one
                    if self.plan.jobs and not jobs.failed and self._walks_jobs_of(record, first):
                        self._submit(LISTS, self._walk_jobs, str(record["id"]))
                    if not first:
                        continue
                    records.append(record)
                    self._remember_creator(record.get("created_by"), record.get("created"))
                projects.offer(records, lambda record, version: project_row(record, version)[0])
                self._report("projects", len(records))
        except DroneOpsError as exc:
            projects.fail(exc)
            jobs.fail(DroneOpsError(f"job walk incomplete because the project list failed: {exc}"))
        except Exception as exc:  # a bug or an unexpected body: fail the table, not silently
            projects.fail(DroneOpsError(f"project walk failed: {type(exc).__name__}: {exc}"))
            jobs.fail(DroneOpsError("job walk incomplete because the project list failed"))

    def _first_sighting(self, project_id: str) -> bool:
        """False when the other project list already had this id: it moved between the
        lists during the walk, so the resource asks for it by id instead."""
        with self._project_ids_lock:
            if project_id in self._project_ids:
                self.conflicts.setdefault("projects", set()).add(project_id)
                return False
            self._project_ids.add(project_id)
            return True

    def _walks_jobs_of(self, project: Record, first_sighting: bool) -> bool:
        """Whether to walk this project's jobs now: at its first sighting on an exact run; on a
        rolling one, once, for new and changed projects and this run's slice (an unchanged
        project can still have changed jobs: job writes do not move the project's `updated`)."""
        rolling = self.plan.job_slice
        if rolling is None:
            return first_sighting
        project_id = str(project["id"])
        wanted = (
            job_slice_of(project_id, rolling[1]) == rolling[0]
            or row_hash(project) not in self.tables["projects"].known_versions
        )
        with self._project_ids_lock:
            if not wanted or project_id in self.job_walked_projects:
                return False
            self.job_walked_projects.add(project_id)
            return True

    def skipped_job_projects(self) -> set[str]:
        """Projects the API listed whose jobs this run did not walk (rolling refresh)."""
        with self._project_ids_lock:
            return self._project_ids - self.job_walked_projects

    def _walk_jobs(self, project_id: str) -> None:
        jobs = self.tables["jobs"]
        if jobs.failed or self.cancelled:
            return
        path = self.plan.jobs_path.format(project_id=project_id)
        seen: set[str] = set()
        try:
            for page in self.client.paginate(
                path,
                stats=jobs.stats,
                not_found_fix=f"check {settings.CONFIG_SECTION}.jobs_path ({self.plan.jobs_path})",
                items_key="jobs",
            ):
                self._check_cancelled()
                records = []
                for record in _items(page, "jobs", path):
                    job_id = str(record["id"])
                    if job_id in seen:
                        continue
                    seen.add(job_id)
                    records.append(record)
                jobs.offer(records, lambda record, version: job_row(record, project_id, version))
                self._report("jobs", len(records))
        except NotFoundError as exc:
            if exc.api_message == "Project not found":
                # deleted while we walked: it has no jobs now; its jobs are retired once a
                # single-record check confirms each of them is gone
                log.info("project %s disappeared during the walk", project_id)
                return
            jobs.fail(exc)
        except DroneOpsError as exc:
            jobs.fail(exc)
        except Exception as exc:
            jobs.fail(DroneOpsError(f"job walk failed: {type(exc).__name__}: {exc}"))

    def _walk_list(self, table: str, path: str, items_key: str) -> None:
        snapshot = self.tables[table]
        seen: set[str] = set()
        try:
            for page in self.client.paginate(
                path, stats=snapshot.stats, critical=True, items_key=items_key
            ):
                self._check_cancelled()
                records = []
                for record in _items(page, items_key, path):
                    if str(record["id"]) in seen:
                        continue
                    seen.add(str(record["id"]))
                    records.append(record)
                snapshot.offer(records, entity_row)
                self._report(table, len(records))
        except DroneOpsError as exc:
            snapshot.fail(exc)
        except Exception as exc:
            snapshot.fail(DroneOpsError(f"{table} walk failed: {type(exc).__name__}: {exc}"))

    def _walk_webhooks(self) -> None:
        webhooks = self.tables["webhooks"]
        ids = self.plan.webhook_ids
        configured = ids is not None
        if ids is None:
            try:
                found: list[str] = []
                for page in self.client.paginate(
                    settings.WEBHOOKS_PATH,
                    stats=webhooks.stats,
                    not_found_fix=(
                        "this API has no webhook list: set"
                        f" {settings.CONFIG_SECTION}.webhook_ids to the ids to sync"
                    ),
                    items_key="webhooks",
                ):
                    found.extend(
                        str(r["id"]) for r in _items(page, "webhooks", settings.WEBHOOKS_PATH)
                    )
                ids = tuple(dict.fromkeys(found))
            except DroneOpsError as exc:
                webhooks.fail(exc)
                self.tables["webhook_deliveries"].fail(exc)
                return
        for webhook_id in ids:
            self._submit(WEBHOOKS, self._walk_webhook, webhook_id, configured)

    def _walk_webhook(self, webhook_id: str, configured: bool) -> None:
        webhooks = self.tables["webhooks"]
        deliveries = self.tables["webhook_deliveries"]
        path = settings.WEBHOOK_PATH_TEMPLATE.format(webhook_id=webhook_id)
        mark = self.plan.delivery_marks.get(webhook_id)
        fix = (
            f"webhook {webhook_id!r} is listed in {settings.CONFIG_SECTION}.webhook_ids but the"
            " API does not know it: remove it from the list or correct the id"
            if configured
            else f"webhook {webhook_id!r} was deleted during the walk; the next run retires it"
        )
        pending: list[Record] = []
        spills: list[Future[SpilledBatch]] = []
        rows_seen = 0
        try:
            for number, page in enumerate(
                self.client.paginate(
                    path, stats=deliveries.stats, not_found_fix=fix, critical=True, items_key="logs"
                )
            ):
                self._check_cancelled()
                if number == 0:
                    record = page.get("webhook")
                    if not isinstance(record, dict) or "id" not in record:
                        raise DroneOpsError(f"GET {path} returned no webhook object")
                    webhooks.offer(
                        [record], lambda record, version: webhook_row(record, version)[0]
                    )
                    self._remember_creator(record.get("created_by"), record.get("created"))
                    self._report("webhooks", 1)
                reached_known = False
                for entry in _items(page, "logs", path):
                    created = entry.get("created")
                    if mark is not None and isinstance(created, int):
                        if created < mark.stop_before_ms:
                            reached_known = True
                            break
                        if str(entry.get("id")) in mark.known_ids:
                            continue
                    pending.append(entry)
                if len(pending) >= settings.ARROW_BATCH_ROWS:
                    # typing happens beside the walk: this thread goes straight on to the next
                    # page of a chain that nothing else can shorten
                    rows_seen += len(pending)
                    spills.append(
                        self._spill_pool.submit(self._spill_deliveries, pending, webhook_id)
                    )
                    pending = []
                if reached_known:
                    break
            if pending:
                rows_seen += len(pending)
                spills.append(self._spill_pool.submit(self._spill_deliveries, pending, webhook_id))
            spilled = [future.result() for future in spills]
        except DroneOpsError as exc:
            if configured or not isinstance(exc, NotFoundError):
                webhooks.fail(exc)
            self.delivery_failures[webhook_id] = exc
            return
        except Exception as exc:
            error = DroneOpsError(f"webhook {webhook_id} walk failed: {type(exc).__name__}: {exc}")
            webhooks.fail(error)
            self.delivery_failures[webhook_id] = error
            return
        # a webhook's entries join the snapshot only once its walk reached known ground, so a
        # failed walk never moves that webhook's high-water mark past a gap
        deliveries.adopt(spilled, rows_seen)
        self.completed_webhooks.add(webhook_id)
        self._report("webhook_deliveries", rows_seen)

    def _spill_deliveries(self, entries: list[Record], webhook_id: str) -> SpilledBatch:
        return self.tables["webhook_deliveries"].spill_table(
            lambda issues: delivery_table(entries, webhook_id, self.run_id, issues)
        )

    def fetch_one(self, path: str, stats: WalkStats) -> dict[str, Any] | None:
        """A single record, or None when the API says it does not exist (404)."""
        try:
            return self.client.get_json(path, stats=stats)
        except NotFoundError:
            return None


def _items(page: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    items = page.get(key)
    if not isinstance(items, list):
        raise DroneOpsError(f"GET {path} returned a page without a {key!r} list")
    for item in items:
        if not isinstance(item, dict) or item.get("id") is None:
            raise DroneOpsError(f"GET {path} returned a {key} entry without an id")
    return items
