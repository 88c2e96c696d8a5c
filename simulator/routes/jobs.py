"""Handlers of a project's jobs: list, create, get, update, delete, assign and unassign pilots."""

from __future__ import annotations

from ..names import ASSIGN_PATH, JOB_PATH, JOBS_PATH, UNASSIGN_PATH
from ..store.jobs import Jobs
from .http import Endpoint, acting, creating, deleting, reading, said, updating

_PROJECT = ("projectId",)
_IDS = ("projectId", "jobId")


def job_endpoints(jobs: Jobs) -> list[Endpoint]:
    return [
        Endpoint(JOBS_PATH, "GET", reading(jobs.page, _PROJECT, ("cursor",))),
        Endpoint(JOBS_PATH, "POST", creating(jobs.create, _PROJECT)),
        Endpoint(JOB_PATH, "GET", reading(jobs.get, _IDS)),
        Endpoint(JOB_PATH, "PATCH", updating(jobs.patch, said("Job updated successfully"), _IDS)),
        Endpoint(JOB_PATH, "DELETE", deleting(jobs.delete, _IDS)),
        Endpoint(ASSIGN_PATH, "POST", acting(jobs.assign, _IDS)),
        Endpoint(UNASSIGN_PATH, "POST", acting(jobs.unassign, _IDS)),
    ]
