"""The projects half of the walk: both project lists, and each listed project's jobs.

Projects feed the job walks as their pages arrive, at most a few dozen queued at a time (the
project list waits for a slot), so the sequential project cursor and the parallel job walks
overlap and the walk holds little however large the workspace. A project seen in both lists
(archived or restored during the walk) is settled by the resource, which asks for it by id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from . import settings
from .client import DroneOpsClient, page_items
from .creators import Creators
from .entities import JOBS, PROJECTS
from .exceptions import DroneOpsError, NotFoundError
from .plan import WalkPlan
from .rolling import job_slice_of
from .spill import TableSnapshot
from .transforms import Record, row_hash

if TYPE_CHECKING:
    from .walk import WalkStats

log = logging.getLogger(__name__)


class ProjectWalks:
    """Mixed into `WorkspaceWalk`, which owns the state and the thread pools used here."""

    client: DroneOpsClient
    plan: WalkPlan
    tables: dict[str, TableSnapshot]
    stats: dict[str, WalkStats]
    creators: Creators
    conflicts: dict[str, set[str]]
    job_walked_projects: set[str]
    _project_ids: set[str]
    _project_ids_lock: threading.Lock
    _queue_job_walk: Callable[[str], None]
    _check_cancelled: Callable[[], None]
    _report: Callable[[str, int], None]

    @property
    def cancelled(self) -> bool:
        raise NotImplementedError

    def _walk_projects(self, params: Mapping[str, str]) -> None:
        projects = self.tables["projects"]
        jobs = self.tables["jobs"]
        try:
            path, items_key = str(PROJECTS.list_path), str(PROJECTS.items_key)
            for page in self.client.paginate(
                path,
                params=params,
                stats=self.stats["projects"],
                critical=True,
                items_key=items_key,
            ):
                self._check_cancelled()
                records = []
                for record in page_items(page, items_key, path):
                    first = self._first_sighting(str(record["id"]))
                    # a rolling run may skip a project's first sighting and still owe a walk
                    # to its second, changed one
                    if (
                        "jobs" in self.plan.tables
                        and not jobs.failed
                        and self._walks_jobs_of(record, first)
                    ):
                        self._queue_job_walk(str(record["id"]))
                    if not first:
                        continue
                    records.append(record)
                    self.creators.remember(record.get("created_by"), record.get("created"))
                projects.offer(records)
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
            items_key = str(JOBS.items_key)
            for page in self.client.paginate(
                path,
                stats=self.stats["jobs"],
                not_found_fix=f"check {settings.CONFIG_SECTION}.jobs_path ({self.plan.jobs_path})",
                items_key=items_key,
            ):
                self._check_cancelled()
                records = unseen(page_items(page, items_key, path), seen)
                jobs.offer(records, parent_id=project_id)
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


def unseen(records: list[Record], seen: set[str]) -> list[Record]:
    """The records whose id this walk has not met yet (a list may repeat one across pages)."""
    fresh = []
    for record in records:
        record_id = str(record["id"])
        if record_id not in seen:
            seen.add(record_id)
            fresh.append(record)
    return fresh
