"""Handlers of a project's jobs: list, create, get, update, delete, assign and unassign pilots."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..names import ASSIGN_PATH, JOB_PATH, JOBS_PATH, UNASSIGN_PATH
from ..store.jobs import Jobs
from .http import (
    Endpoint,
    created,
    json_response,
    message,
    no_content,
    path_param,
    query_param,
    read_json,
)


def _ids(r: Request) -> tuple[str, str]:
    return path_param(r, "projectId"), path_param(r, "jobId")


class JobRoutes:
    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(JOBS_PATH, "GET", self.page),
            Endpoint(JOBS_PATH, "POST", self.create),
            Endpoint(JOB_PATH, "GET", self.get),
            Endpoint(JOB_PATH, "PATCH", self.patch),
            Endpoint(JOB_PATH, "DELETE", self.delete),
            Endpoint(ASSIGN_PATH, "POST", self.assign),
            Endpoint(UNASSIGN_PATH, "POST", self.unassign),
        ]

    async def page(self, r: Request) -> Response:
        return json_response(self.jobs.page(path_param(r, "projectId"), query_param(r, "cursor")))

    async def create(self, r: Request) -> Response:
        body = await read_json(r)
        return created(self.jobs.create(path_param(r, "projectId"), body))

    async def get(self, r: Request) -> Response:
        return json_response(self.jobs.get(*_ids(r)))

    async def patch(self, r: Request) -> Response:
        body = await read_json(r)
        self.jobs.patch(*_ids(r), body)
        return message("Job updated successfully")

    async def delete(self, r: Request) -> Response:
        self.jobs.delete(*_ids(r))
        return no_content()

    async def assign(self, r: Request) -> Response:
        body = await read_json(r)
        return json_response(self.jobs.assign(*_ids(r), body))

    async def unassign(self, r: Request) -> Response:
        body = await read_json(r)
        return json_response(self.jobs.unassign(*_ids(r), body))
