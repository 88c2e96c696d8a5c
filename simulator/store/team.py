"""The team: the workspace's members, listed by role; pilots are the ones jobs can be assigned.

A member's own record leaves out `status`, which only the list shows.
"""

from __future__ import annotations

from functools import partial

from ..bodies import ROLE_FILTER
from ..names import TEAM
from ..validation import check_query
from .keyset import cached, decode_cursor, list_body
from .state import Workspace, not_found


class Team:
    """The team operations of the API (read-only: the API has no member writes)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def page(self, cursor: str | None, role: str | None) -> bytes:
        after = decode_cursor(TEAM, cursor)
        role = check_query(role, ROLE_FILTER)
        ws = self.ws
        team = ws.team
        keep = None if role is None or role == "all" else lambda i: team[i]["role"] == role
        with ws.lock:
            ids, last = ws.team_index.page(after, keep)
            encs = [cached(ws.team_enc, i, partial(team.__getitem__, i)) for i in ids]
        return list_body(TEAM, encs, last)

    def get(self, member_id: str) -> bytes:
        with self.ws.lock:
            m = self.ws.team.get(member_id)
            if m is None:
                raise not_found("User not found")
            return cached(
                self.ws.member_enc, member_id, lambda: {k: v for k, v in m.items() if k != "status"}
            )
