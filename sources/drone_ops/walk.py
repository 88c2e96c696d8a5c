"""The concurrent walk of a workspace: every list the run needs, fetched once, spilled to disk.

Why a walk before any row is handed to dlt: a table may only retire rows after the walk that
should have contained them finished every page, and the mass-delete guard must be able to
refuse a table before anything of it is loaded. So each table's rows are typed into Arrow
batches as pages arrive and spilled (`spill.py`: memory stays flat), and the resources decide
afterwards what to load.

Three shapes of walk, read from the entity registry: plain lists (team members, job types);
projects, whose pages feed the per-project job walks as they arrive (so the sequential project
cursor and the parallel job walks overlap); and webhooks, each a long chain of delivery-log
pages walked until it reaches what the warehouse already holds.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .breaches import Issue
from .client import DroneOpsClient, page_items
from .config import SourceConfig
from .creators import Creators
from .entities import ENTITIES, LISTS, PROJECTS, WEBHOOKS, WEBHOOKS_TABLE, Entity
from .exceptions import DroneOpsError, Interrupted
from .plan import WalkPlan
from .project_walk import ProjectWalks, unseen
from .run import ProgressCallback, RunOptions
from .spill import SPILL_PREFIX, TableSnapshot
from .webhook_walk import WebhookWalks

log = logging.getLogger(__name__)

JOB_QUEUE_PER_WORKER = 4
"""Job walks queued or under way at most, per worker: the project lists wait for the job walks
instead of queueing one task per project (20,000 at `large`)."""


@dataclass
class WalkStats:
    """Request counters of one table's walk; shared by its worker threads."""

    requests: int = 0
    retries: int = 0
    pages: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.pages += pages


def open_walk(config: SourceConfig, run: RunOptions) -> WorkspaceWalk:
    """The walk of one run, with its own client: the caller closes it (`with open_walk(...)`)."""
    plan = WalkPlan.for_run(config, run)
    client = DroneOpsClient(
        config.base_url,
        config.api_key,
        max_workers=config.max_workers,
        timeout=config.timeout_seconds,
        max_attempts=config.max_attempts,
        retry_budget_seconds=config.retry_budget_seconds,
        max_requests_per_second=config.max_requests_per_second,
        transport=run.transport,
    )
    return WorkspaceWalk(
        client,
        plan,
        run_id=run.run_id,
        max_workers=config.max_workers,
        progress=run.progress,
        spill_root=run.spill_root,
        stop=run.stop,
    )


class WorkspaceWalk(ProjectWalks, WebhookWalks):
    """Runs a `WalkPlan` with bounded concurrency and keeps every table's snapshot.

    A context manager: whoever opens the walk (`open_walk`, from `run_sync`) closes it, which
    stops a walk still under way and removes its spill files."""

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
                entity,
                spill,
                run_id,
                self.issues,
                plan.known_versions.get(name, frozenset()),
            )
            for name, entity in ENTITIES.items()
            if entity.list_path is not None
        }
        self.stats = {name: WalkStats() for name in self.tables}
        """Request counters per table, shared by that table's walk threads."""
        self.creators = Creators()
        self.conflicts: dict[str, set[str]] = {}
        """Per table, ids the walk saw twice (a project archived between the two lists)."""
        self._project_ids: set[str] = set()
        self._project_ids_lock = threading.Lock()
        self.job_walked_projects: set[str] = set()
        """On a rolling refresh, the projects whose jobs this run walked (an exact run walks
        every project's, once, at its first sighting, and does not keep this set)."""
        self.completed_webhooks: set[str] = set()
        self.completed_marks: dict[str, int] = {}
        """Per webhook whose chain reached known ground: the newest entry it walked."""
        self.delivery_failures: dict[str, DroneOpsError] = {}
        self._run_lock = threading.Lock()
        self._futures: dict[str, deque[Future[None]]] = {LISTS: deque(), WEBHOOKS: deque()}
        self._futures_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._stage_done = {LISTS: threading.Event(), WEBHOOKS: threading.Event()}
        self._stage_seconds: dict[str, float] = {}
        self._failure: BaseException | None = None
        self._cancel = threading.Event()
        self._job_slots = threading.BoundedSemaphore(JOB_QUEUE_PER_WORKER * self.max_workers)
        """Job walks queued or under way: a project list waits for a slot before it queues
        another, so the pool never holds one task per project (20,000 at `large`)."""

    def __enter__(self) -> WorkspaceWalk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops a walk still under way (each loop ends after its current request), then
        removes the spill files and closes the client."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        self._tmp.cleanup()
        self.client.close()

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
        stages = ENTITIES[table].stages
        for stage in stages:
            while not self._stage_done[stage].wait(0.1):
                if self._stop is not None and self._stop.is_set():
                    self.interrupt()
        if self._failure is not None:
            raise DroneOpsError(
                f"the workspace walk failed: {type(self._failure).__name__}: {self._failure}"
            ) from self._failure
        return max(self._stage_seconds.get(stage, 0.0) for stage in stages)

    def walking(self, stage: str, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a stage to finish; True while it is still walking
        (the pipeline loads delivery waves meanwhile)."""
        self.start()
        return not self._stage_done[stage].wait(timeout)

    def interrupt(self) -> None:
        """Stops the walk now: requests in flight are abandoned, and every table whose walk
        had not finished is marked `Interrupted`, so nothing partial of it is loaded."""
        self._cancel.set()
        self.client.cancel()
        for stage, done in self._stage_done.items():
            if done.is_set():
                continue
            for table, entity in ENTITIES.items():
                if stage in entity.stages and table in self.tables:
                    self.tables[table].interrupt()
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
            # than the in-flight request limit, which the client's limiter enforces (one pool
            # for every walk keeps the process's threads, and their contention for the GIL, at
            # what the limit needs); spills get their own pool: a walk thread waits for its
            # spills, and waiting on work queued behind itself in the same pool could deadlock
            with (
                ThreadPoolExecutor(
                    max_workers=self.max_workers + 4, thread_name_prefix="drone-ops"
                ) as pool,
                ThreadPoolExecutor(max_workers=2, thread_name_prefix="drone-ops-spill") as spills,
            ):
                self._pool = pool
                self._spill_pool = spills
                project_walks: list[Future[None]] = []
                for entity in ENTITIES.values():
                    if entity.list_path is None or entity.parent or not self.plan.walks(entity):
                        continue
                    if entity is PROJECTS:
                        project_walks += [
                            pool.submit(self._walk_projects, params)
                            for params in PROJECTS.list_variants
                        ]
                    elif entity is WEBHOOKS_TABLE:
                        self._submit(WEBHOOKS, self._walk_webhooks)
                    else:
                        self._submit(LISTS, self._walk_list, entity)
                for walk in project_walks:
                    walk.result()
                self._wait_for_job_walks()
                for stage in (LISTS, WEBHOOKS):
                    self._finish_stage(stage)
        except BaseException as exc:  # surfaced by wait(); the run fails with it
            self._failure = exc
        finally:
            for done in self._stage_done.values():
                done.set()

    def _queue_job_walk(self, project_id: str) -> None:
        """Queues a project's job walk once a slot is free (waiting while the queue is full)."""
        while not self._job_slots.acquire(timeout=0.25):
            self._check_cancelled()
        future = self._pool.submit(self._walk_jobs, project_id)
        future.add_done_callback(lambda _: self._job_slots.release())

    def _wait_for_job_walks(self) -> None:
        """Returns once every queued job walk has ended (all slots are free again)."""
        slots = JOB_QUEUE_PER_WORKER * self.max_workers
        for _ in range(slots):
            self._job_slots.acquire()
        for _ in range(slots):
            self._job_slots.release()

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
        for table, entity in ENTITIES.items():
            if entity.stages == (stage,) and table in self.tables:
                self.tables[table].finish()
        self._stage_seconds[stage] = time.monotonic() - self._started
        self._stage_done[stage].set()

    def _report(self, table: str, rows: int) -> None:
        if self.progress is not None and rows:
            self.progress(table, rows)

    def _walk_list(self, entity: Entity) -> None:
        """A plain list (team members, job types): every page, each id once."""
        table, path, items_key = entity.table, str(entity.list_path), str(entity.items_key)
        snapshot = self.tables[table]
        seen: set[str] = set()
        try:
            for page in self.client.paginate(
                path, stats=self.stats[table], critical=True, items_key=items_key
            ):
                self._check_cancelled()
                records = unseen(page_items(page, items_key, path), seen)
                snapshot.offer(records)
                self._report(table, len(records))
        except DroneOpsError as exc:
            snapshot.fail(exc)
        except Exception as exc:
            snapshot.fail(DroneOpsError(f"{table} walk failed: {type(exc).__name__}: {exc}"))
