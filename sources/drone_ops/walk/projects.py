"""The projects half of the walk: both project lists, and each listed project's jobs.

Projects feed the job walks as their pages arrive, at most a few dozen queued at a time (the
project list waits for a slot), so the sequential project cursor and the parallel job walks
overlap and the walk holds little however large the workspace. A project seen in both lists
(archived or restored during the walk) is settled by the resource, which asks for it by id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from .. import settings
from ..compare.changes import first_look
from ..exceptions import DroneOpsError, NotFoundError
from ..http import page_items
from ..tables.entities import JOBS, PROJECTS
from ..tables.rows import Record
from .context import WalkContext
from .lists import unseen
from .rolling import JobSlice, job_slice_of

log = logging.getLogger(__name__)

JOB_QUEUE_PER_WORKER = 4
"""Job walks queued or under way at most, per worker: the project lists wait for the job walks
instead of queueing one task per project."""


class ProjectWalker:
    """Both project lists and each listed project's jobs, over the walk's shared context."""

    def __init__(self, context: WalkContext, max_workers: int) -> None:
        self.context = context
        self.conflicts: set[str] = set()
        """Project ids the walk saw in both lists (archived or restored between the two)."""
        self.job_walked_projects: set[str] = set()
        """On a rolling refresh, the projects whose jobs this run walked (an exact run walks
        every project's, once, at its first sighting, and does not keep this set)."""
        self._project_ids: set[str] = set()
        self._project_ids_lock = threading.Lock()
        self._slots = JOB_QUEUE_PER_WORKER * max_workers
        self._job_slots = threading.BoundedSemaphore(self._slots)
        """Job walks queued or under way: a project list waits for a slot before it queues
        another (`JOB_QUEUE_PER_WORKER`)."""

    def walk_projects(self, params: Mapping[str, str]) -> None:
        """Walks one project list (active or archived); both feed the `projects` snapshot, so
        once either has failed it the other stops at its next page: nothing of it would load."""
        projects = self.context.tables["projects"]
        jobs = self.context.tables["jobs"]
        try:
            path, items_key = str(PROJECTS.list_path), str(PROJECTS.items_key)
            for page in self.context.client.paginate(
                path,
                params=params,
                stats=self.context.stats["projects"],
                critical=True,
                items_key=items_key,
                stop=lambda: projects.failed,
            ):
                self.context.check_cancelled()
                records, again = [], []
                for record in page_items(page, items_key, path):
                    if not self._first_sighting(str(record["id"])):
                        again.append(record)
                        continue
                    records.append(record)
                    self.context.creators.remember(record.get("created_by"), record.get("created"))
                held = projects.offer(records)
                self.context.report("projects", len(records))
                if "jobs" in self.context.plan.tables:
                    self._queue_job_walks(records, held, again)
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
                self.conflicts.add(project_id)
                return False
            self._project_ids.add(project_id)
            return True

    def _queue_job_walks(self, records: list[Record], held: list[str], again: list[Record]) -> None:
        """Queues the job walks a page of projects owes: on an exact run each project's at its
        first sighting; on a rolling one, once, those of this run's slice and of every project
        not found held (job writes do not move a project's `updated`). A project seen `again`
        (moved to the other list) gets a look of its own: it may owe a walk."""
        rolling = self.context.plan.job_slice
        if rolling is None:
            owed = [str(record["id"]) for record in records]
        else:
            again_held = first_look(again, self.context.tables["projects"].held_hashes).held_ids
            owed = _changed_or_in_slice(records, held, rolling)
            owed += _changed_or_in_slice(again, again_held, rolling)
        for project_id in owed:
            if self.context.tables["jobs"].failed:
                return
            if rolling is None or self._first_job_walk(project_id):
                self.queue_job_walk(project_id)

    def _first_job_walk(self, project_id: str) -> bool:
        """Whether this rolling run has not walked this project's jobs yet (and now will)."""
        with self._project_ids_lock:
            if project_id in self.job_walked_projects:
                return False
            self.job_walked_projects.add(project_id)
            return True

    def queue_job_walk(self, project_id: str) -> None:
        """Queues a project's job walk once a slot is free (waiting while the queue is full)."""
        while not self._job_slots.acquire(timeout=0.25):
            self.context.check_cancelled()
        assert self.context.pool is not None
        future = self.context.pool.submit(self.walk_jobs, project_id)
        future.add_done_callback(lambda _: self._job_slots.release())

    def wait_for_job_walks(self) -> None:
        """Returns once every queued job walk has ended (all slots are free again)."""
        for _ in range(self._slots):
            self._job_slots.acquire()
        for _ in range(self._slots):
            self._job_slots.release()

    def skipped_job_projects(self) -> set[str]:
        """Projects the API listed whose jobs this run did not walk (rolling refresh)."""
        with self._project_ids_lock:
            return self._project_ids - self.job_walked_projects

    def walk_jobs(self, project_id: str) -> None:
        """Walks one project's jobs; stops at its next page once `jobs` failed elsewhere."""
        jobs = self.context.tables["jobs"]
        if jobs.failed or self.context.cancel.is_set():
            return
        path = self.context.plan.jobs_path.format(project_id=project_id)
        seen: set[str] = set()
        try:
            items_key = str(JOBS.items_key)
            for page in self.context.client.paginate(
                path,
                stats=self.context.stats["jobs"],
                not_found_fix=(
                    f"check {settings.CONFIG_SECTION}.jobs_path ({self.context.plan.jobs_path})"
                ),
                items_key=items_key,
                stop=lambda: jobs.failed,
            ):
                self.context.check_cancelled()
                records = unseen(page_items(page, items_key, path), seen)
                jobs.offer(records, parent_id=project_id)
                self.context.report("jobs", len(records))
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


def _changed_or_in_slice(records: list[Record], held: list[str], rolling: JobSlice) -> list[str]:
    """Ids of the projects whose record the first look did not find held, or in the slice."""
    kept = set(held)
    ids = (str(record["id"]) for record in records)
    return [i for i in ids if i not in kept or job_slice_of(i, rolling[1]) == rolling[0]]
