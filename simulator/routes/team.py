"""Handlers of /v1/team: the member list (by role) and one member."""

from __future__ import annotations

from ..names import MEMBER_PATH, TEAM_PATH
from ..store.team import Team
from .http import Endpoint, reading


def team_endpoints(team: Team) -> list[Endpoint]:
    return [
        Endpoint(TEAM_PATH, "GET", reading(team.page, query=("cursor", "role"))),
        Endpoint(MEMBER_PATH, "GET", reading(team.get, ("teamMemberId",))),
    ]
