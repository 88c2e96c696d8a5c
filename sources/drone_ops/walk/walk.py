"""The concurrent walk of a workspace: every list the run needs, fetched once, spilled to disk.

Why a walk before any row is handed to dlt: a table may only retire rows after the walk that
should have contained them finished every page, and the mass-delete guard must be able to
refuse a table before anything of it is loaded. Three walkers share one `WalkContext`: plain
lists (`lists.py`), projects feeding per-project job walks as pages arrive (`projects.py`),
and webhooks with their delivery-log chains (`webhooks.py`).
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..exceptions import DroneOpsError
from ..http import DroneOpsClient
from ..tables.breaches import Issue
from ..tables.entities import ENTITIES, LISTS, PROJECTS, WEBHOOKS, WEBHOOKS_TABLE
from .context import ProgressCallback, WalkContext, WalkStats
from .lists import walk_list
from .plan import WalkPlan
from .projects import ProjectWalker
from .spill import SPILL_PREFIX, TableSnapshot
from .webhooks import WebhookWalker


class WorkspaceWalk:
    """Runs a `WalkPlan` with bounded concurrency and keeps every table's snapshot.

    Whoever opens the walk closes it (`SyncRun`), which stops a walk still under way and
    removes its spill files. `cancel` is the run's one cancellation token, shared with the
    client: once set, every request loop ends before its next request."""

    def __init__(
        self,
        client: DroneOpsClient,
        plan: WalkPlan,
        *,
        run_id: str,
        max_workers: int,
        cancel: threading.Event,
        progress: ProgressCallback | None = None,
        spill_root: Path | None = None,
    ) -> None:
        self.max_workers = max(1, max_workers)
        if spill_root is not None:
            spill_root.mkdir(parents=True, exist_ok=True)
        self._tmp = tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=spill_root)
        spill = Path(self._tmp.name)
        issues: list[Issue] = []
        tables = {
            name: TableSnapshot(
                entity, spill, run_id, issues, plan.held_hashes.get(name, frozenset())
            )
            for name, entity in ENTITIES.items()
            if entity.list_path is not None
        }
        self.context = WalkContext(
            client=client,
            plan=plan,
            run_id=run_id,
            tables=tables,
            cancel=cancel,
            progress=progress,
            issues=issues,
            stats={name: WalkStats() for name in tables},
        )
        self.projects = ProjectWalker(self.context, self.max_workers)
        self.webhooks = WebhookWalker(self.context)
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._stage_done = {LISTS: threading.Event(), WEBHOOKS: threading.Event()}
        self._stage_seconds: dict[str, float] = {}
        self._failure: BaseException | None = None

    @property
    def plan(self) -> WalkPlan:
        return self.context.plan

    @property
    def tables(self) -> dict[str, TableSnapshot]:
        return self.context.tables

    @property
    def stats(self) -> dict[str, WalkStats]:
        return self.context.stats

    @property
    def issues(self) -> list[Issue]:
        return self.context.issues

    def close(self) -> None:
        """Stops a walk still under way, then removes the spill files and closes the client.

        A walk whose stages have all finished is only waited for: its thread may still be
        shutting its pools down as the run ends, and the token is the run's, so setting it then
        would make a finished run look interrupted (`SyncRun.interrupted`), and such a run
        records no delivery marks: the next one walks every log whole again."""
        if self._thread is not None and self._thread.is_alive():
            if not all(done.is_set() for done in self._stage_done.values()):
                self.context.cancel.set()
            self._thread.join()
        self._tmp.cleanup()
        self.context.client.close()

    def start(self) -> None:
        """Starts the walk in the background once; every table of a run shares it."""
        with self._run_lock:
            if self._thread is None:
                self._started = time.monotonic()
                self._thread = threading.Thread(
                    target=self._run, name="drone-ops-walk", daemon=True
                )
                self._thread.start()

    def wait(self, table: str) -> float:
        """Blocks until the walks `table` depends on have finished; returns their seconds."""
        self.start()
        stages = ENTITIES[table].stages
        for stage in stages:
            while not self._stage_done[stage].wait(0.1):
                if self.context.cancel.is_set():
                    self.interrupt()
        if self._failure is not None:
            raise DroneOpsError(
                f"the workspace walk failed: {type(self._failure).__name__}: {self._failure}"
            ) from self._failure
        return max(self._stage_seconds.get(stage, 0.0) for stage in stages)

    def walking(self, stage: str, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a stage to finish; True while it is still walking."""
        self.start()
        return not self._stage_done[stage].wait(timeout)

    def interrupt(self) -> None:
        """Stops the walk now: requests in flight are abandoned, and every table whose walk
        had not finished is marked `Interrupted`, so nothing partial of it is loaded."""
        self.context.cancel.set()
        self.context.client.cancel()
        for stage, done in self._stage_done.items():
            if done.is_set():
                continue
            for table, entity in ENTITIES.items():
                if stage in entity.stages and table in self.tables:
                    self.tables[table].interrupt()
            done.set()

    def lookup_records(self, table: str, paths: Sequence[str]) -> list[dict[str, Any] | None]:
        """Each single-record path asked once, in parallel: the record, or None for a 404.
        What the comparison uses to confirm a deletion before it is believed."""
        stats = self.stats[table]
        client = self.context.client
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(lambda path: client.get_record(path, stats), paths))

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
                self.context.pool = pool
                self.context.spill_pool = spills
                project_walks: list[Future[None]] = []
                for entity in ENTITIES.values():
                    if entity.list_path is None or entity.parent or not self.plan.walks(entity):
                        continue
                    if entity is PROJECTS:
                        project_walks += [
                            pool.submit(self.projects.walk_projects, params)
                            for params in PROJECTS.list_variants
                        ]
                    elif entity is WEBHOOKS_TABLE:
                        self.context.submit(WEBHOOKS, self.webhooks.walk_webhooks)
                    else:
                        self.context.submit(LISTS, walk_list, self.context, entity)
                for walk in project_walks:
                    walk.result()
                self.projects.wait_for_job_walks()
                for stage in (LISTS, WEBHOOKS):
                    self._finish_stage(stage)
        except BaseException as exc:  # surfaced by wait(); the run fails with it
            self._failure = exc
        finally:
            for done in self._stage_done.values():
                done.set()

    def _finish_stage(self, stage: str) -> None:
        """Waits for every walk of a stage (including those its walks queued meanwhile)."""
        context = self.context
        while True:
            with context.futures_lock:
                queue = context.futures.get(stage)
                if not queue:
                    break
                future = queue[0]
            future.result()
            with context.futures_lock:
                queue.popleft()
        for table, entity in ENTITIES.items():
            if entity.stages == (stage,) and table in self.tables:
                self.tables[table].finish()
        self._stage_seconds[stage] = time.monotonic() - self._started
        self._stage_done[stage].set()
