"""Handlers of /v1/job-types: list, create and get."""

from __future__ import annotations

from ..names import JOB_TYPE_PATH, JOB_TYPES_PATH
from ..store.job_types import JobTypes
from .http import Endpoint, creating, reading


def job_type_endpoints(job_types: JobTypes) -> list[Endpoint]:
    return [
        Endpoint(JOB_TYPES_PATH, "GET", reading(job_types.page, query=("cursor",))),
        Endpoint(JOB_TYPES_PATH, "POST", creating(job_types.create)),
        Endpoint(JOB_TYPE_PATH, "GET", reading(job_types.get, ("jobTypeId",))),
    ]
