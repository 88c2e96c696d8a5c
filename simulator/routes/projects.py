"""Handlers of /v1/projects: list, create, get, update, delete and archive."""

from __future__ import annotations

from ..names import ARCHIVE_PATH, PROJECT_PATH, PROJECTS_PATH
from ..store.projects import Projects
from .http import Endpoint, creating, deleting, reading, said, updating

_ID = ("projectId",)


def _archived(archived: bool) -> str:
    return f"Project {'archived' if archived else 'restored'} successfully"


def project_endpoints(projects: Projects) -> list[Endpoint]:
    return [
        Endpoint(
            PROJECTS_PATH, "GET", reading(projects.page, query=("cursor", "status", "archived"))
        ),
        Endpoint(PROJECTS_PATH, "POST", creating(projects.create)),
        Endpoint(PROJECT_PATH, "GET", reading(projects.get, _ID)),
        Endpoint(
            PROJECT_PATH,
            "PATCH",
            updating(projects.patch, said("Project updated successfully"), _ID),
        ),
        Endpoint(PROJECT_PATH, "DELETE", deleting(projects.delete, _ID)),
        Endpoint(ARCHIVE_PATH, "POST", updating(projects.archive, _archived, _ID)),
    ]
