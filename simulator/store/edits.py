"""Admin edits: what a person changes in the dashboard and the API cannot, one record at a time.

The API only creates job types and never writes team members; a dashboard adds, changes and
removes both, and an import from another system can leave a record's own `created` or
`updated` anywhere on the clock. Tests that generate histories need those changes too, so the
admin API offers them here, through the same rows, indexes and caches the API's own writes use.
Like churn, an edit emits no webhook event (dashboard edits are not webhook-visible here).

What an edit may set is each list's record fields (`EDITABLE`); ids chosen for a new member or
job type use the simulator's own id alphabet, which its list cursors carry.
"""

from __future__ import annotations

import re
from typing import Any

from ..names import JOB_TYPES, JOBS, PROJECTS, TEAM
from ..rules import ROLES
from ..validation import bad
from .keyset import KeyIndex
from .state import Workspace, not_found, now_ms

EDITABLE: dict[str, frozenset[str]] = {
    TEAM: frozenset(
        {
            *("email", "first_name", "last_name", "role", "status", "title"),
            *("phone_number", "profile_picture", "created", "updated"),
        }
    ),
    JOB_TYPES: frozenset({"name", "icon", "is_predefined", "created"}),
    PROJECTS: frozenset(
        {
            *("name", "description", "status", "start_date", "end_date", "created", "updated"),
            *("archived", "external_id", "laanc_number", "other_status_reason"),
        }
    ),
    JOBS: frozenset(
        {
            *("name", "description", "type", "status", "priority", "start_date", "end_date"),
            *("latitude", "longitude", "inspection_notes", "capture_types", "external_id"),
            *("created", "updated", "other_status_reason"),
        }
    ),
}
"""Per list, the fields an edit may set (`created` of a job type is its list position)."""

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_MS = 253_402_300_799_999
"""The last millisecond of year 9999: a timestamp an ISO date can still show."""


def _checked(list_name: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields, or 400 naming the first one this list's records do not have or whose
    timestamp or role is not one the API could show."""
    for name, value in fields.items():
        if name not in EDITABLE[list_name]:
            raise bad(f"{list_name} records have no editable field {name!r}")
        if name in ("created", "updated") and (
            not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_MS
        ):
            raise bad(f"{name} must be an integer of milliseconds from 0 to {MAX_MS}")
    if "role" in fields and fields["role"] not in ROLES:
        raise bad(f"role must be one of: {', '.join(ROLES)}")
    return fields


class Edits:
    """Dashboard edits over the shared workspace, each under the store lock."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def edit(
        self, list_name: str, record_id: str | None, fields: dict[str, Any], delete: bool
    ) -> dict[str, Any]:
        """Deletes the record, sets `fields` on it, or (team, job types) adds it when the id is
        new or none; returns the record as stored, `{"id", "deleted": true}` after a delete."""
        if list_name not in EDITABLE:
            raise bad(f"list must be one of: {', '.join(EDITABLE)}")
        fields = _checked(list_name, fields)
        with self.ws.lock:
            if list_name == TEAM:
                return self._member(record_id, fields, delete)
            if list_name == JOB_TYPES:
                return self._job_type(record_id, fields, delete)
            if record_id is None or delete:
                raise bad(f"{list_name} are created and deleted through the API")
            if list_name == PROJECTS:
                return self._project(record_id, fields)
            return self._job(record_id, fields)

    def _new_id(self, record_id: str | None, prefix: str) -> str:
        if record_id is None:
            return self.ws.new_id(prefix)
        if not ID_PATTERN.fullmatch(record_id):
            raise bad(f"a chosen id must match {ID_PATTERN.pattern}")
        return record_id

    def _member(
        self, member_id: str | None, fields: dict[str, Any], delete: bool
    ) -> dict[str, Any]:
        ws = self.ws
        member = ws.team.get(member_id) if member_id is not None else None
        if delete:
            if member is None:
                raise not_found("User not found")
            ws.team_index.remove((member["created"], member["id"]))
            del ws.team[member["id"]]
            self._forget_member(member["id"])
            return {"id": member["id"], "deleted": True}
        if member is None:
            if "email" not in fields or "role" not in fields:
                raise bad("a new member needs email and role")
            t = ws.now()
            member = {
                "id": self._new_id(member_id, "usr_"),
                "email": fields["email"],
                "first_name": None,
                "last_name": None,
                "role": fields["role"],
                "status": "active",
                "title": None,
                "phone_number": None,
                "profile_picture": None,
                "created": t,
                "updated": t,
            }
            ws.team[member["id"]] = member
            ws.team_index.add((t, member["id"]))
            fields = {"updated": t, **fields}
        self._set(ws.team_index, member, fields)
        self._forget_member(member["id"])
        return dict(member)

    def _forget_member(self, member_id: str) -> None:
        self.ws.team_enc.pop(member_id, None)
        self.ws.member_enc.pop(member_id, None)

    def _job_type(
        self, type_id: str | None, fields: dict[str, Any], delete: bool
    ) -> dict[str, Any]:
        ws = self.ws
        job_type = ws.job_types.get(type_id) if type_id is not None else None
        if delete:
            if job_type is None or type_id is None:
                raise not_found("Job Type not found")
            ws.job_type_index.remove((ws.job_type_created.pop(type_id), type_id))
            del ws.job_types[type_id]
            return {"id": type_id, "deleted": True}
        if job_type is None:
            if "name" not in fields:
                raise bad("a new job type needs a name")
            type_id = self._new_id(type_id, "jt_")
            job_type = {"id": type_id, "name": "", "icon": "settings", "is_predefined": False}
            ws.job_types[type_id] = job_type
            ws.job_type_created[type_id] = ws.now()
            ws.job_type_index.add((ws.job_type_created[type_id], type_id))
        assert type_id is not None
        created = fields.pop("created", None)
        if created is not None:
            ws.job_type_index.remove((ws.job_type_created[type_id], type_id))
            ws.job_type_created[type_id] = created
            ws.job_type_index.add((created, type_id))
        job_type.update(fields)
        return dict(job_type)

    def _project(self, project_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        project = self.ws.project(project_id)
        self._set(self.ws.project_index, project, fields)
        self.ws.project_enc.pop(project_id, None)
        return dict(project)

    def _job(self, job_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        ws = self.ws
        owner = ws.job_owner(job_id)
        if owner is None:
            raise not_found("Job not found")
        row = ws.materialize_job(job_id)
        self._set(ws.project_jobs[owner], row, fields)
        ws.job_enc.pop(job_id, None)
        return dict(row)

    @staticmethod
    def _set(index: KeyIndex, row: dict[str, Any], fields: dict[str, Any]) -> None:
        """Sets the fields on a row of `index`, keeping its (created, id) key in step; a row
        whose fields changed without a given `updated` is updated now, as an API write is."""
        changed = {k: v for k, v in fields.items() if row.get(k) != v}
        if "created" in changed:
            index.remove((row["created"], row["id"]))
            index.add((changed["created"], row["id"]))
        row.update(changed)
        if changed and "updated" not in fields and "updated" in row:
            row["updated"] = max(now_ms(), row["updated"] + 1)
