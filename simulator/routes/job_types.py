"""Handlers of /v1/job-types: list, create and get."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..names import JOB_TYPE_PATH, JOB_TYPES_PATH
from ..store.job_types import JobTypes
from .http import Endpoint, created, json_response, path_param, query_param, read_json


class JobTypeRoutes:
    def __init__(self, job_types: JobTypes) -> None:
        self.job_types = job_types

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(JOB_TYPES_PATH, "GET", self.page),
            Endpoint(JOB_TYPES_PATH, "POST", self.create),
            Endpoint(JOB_TYPE_PATH, "GET", self.get),
        ]

    async def page(self, r: Request) -> Response:
        return json_response(self.job_types.page(query_param(r, "cursor")))

    async def create(self, r: Request) -> Response:
        return created(self.job_types.create(await read_json(r)))

    async def get(self, r: Request) -> Response:
        return json_response(self.job_types.get(path_param(r, "jobTypeId")))
