"""Handlers of /v1/team: the member list (by role) and one member."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..names import MEMBER_PATH, TEAM_PATH
from ..store.team import Team
from .http import Endpoint, json_response, path_param, query_param


class TeamRoutes:
    def __init__(self, team: Team) -> None:
        self.team = team

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(TEAM_PATH, "GET", self.page),
            Endpoint(MEMBER_PATH, "GET", self.get),
        ]

    async def page(self, r: Request) -> Response:
        return json_response(self.team.page(query_param(r, "cursor"), query_param(r, "role")))

    async def get(self, r: Request) -> Response:
        return json_response(self.team.get(path_param(r, "teamMemberId")))
