"""Handlers of /v1/projects: list, create, get, update, delete and archive."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..names import ARCHIVE_PATH, PROJECT_PATH, PROJECTS_PATH
from ..store.projects import Projects
from .http import Endpoint, created, json_response, message, no_content, path_param, read_json


class ProjectRoutes:
    def __init__(self, projects: Projects) -> None:
        self.projects = projects

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(PROJECTS_PATH, "GET", self.page),
            Endpoint(PROJECTS_PATH, "POST", self.create),
            Endpoint(PROJECT_PATH, "GET", self.get),
            Endpoint(PROJECT_PATH, "PATCH", self.patch),
            Endpoint(PROJECT_PATH, "DELETE", self.delete),
            Endpoint(ARCHIVE_PATH, "POST", self.archive),
        ]

    async def page(self, r: Request) -> Response:
        qp = r.query_params
        return json_response(
            self.projects.page(qp.get("cursor"), qp.get("status"), qp.get("archived"))
        )

    async def create(self, r: Request) -> Response:
        return created(self.projects.create(await read_json(r)))

    async def get(self, r: Request) -> Response:
        return json_response(self.projects.get(path_param(r, "projectId")))

    async def patch(self, r: Request) -> Response:
        body = await read_json(r)
        self.projects.patch(path_param(r, "projectId"), body)
        return message("Project updated successfully")

    async def archive(self, r: Request) -> Response:
        body = await read_json(r)
        archived = self.projects.archive(path_param(r, "projectId"), body)
        return message(f"Project {'archived' if archived else 'restored'} successfully")

    async def delete(self, r: Request) -> Response:
        self.projects.delete(path_param(r, "projectId"))
        return no_content()
