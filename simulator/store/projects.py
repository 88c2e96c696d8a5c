"""Projects: the list (with its status and archived filters), one project, and its changes.

Creating, updating and archiving a project emit the events webhooks subscribe to; deleting one
cascades to its jobs and their pilot assignments.
"""

from __future__ import annotations

from typing import Any

from ..bodies import ARCHIVED_FILTER, STATUS_FILTER
from ..names import PROJECTS
from ..validation import (
    check_query,
    validate_archive,
    validate_project_create,
    validate_project_patch,
)
from .keyset import KeyIndex, cached, decode_cursor, encode_row, list_body
from .state import Workspace, now_ms


class Projects:
    """The project operations of the API, over the shared workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def page(self, cursor: str | None, status: str | None, archived: str | None) -> bytes:
        after = decode_cursor(PROJECTS, cursor)
        want_archived = check_query(archived, ARCHIVED_FILTER) == "true"
        wanted = check_query(status, STATUS_FILTER)
        statuses = None if wanted is None else set(wanted.split(","))
        ws = self.ws
        with ws.lock:
            projects = ws.projects
            if statuses is None:

                def keep(pid: str) -> bool:
                    return projects[pid]["archived"] is want_archived
            else:

                def keep(pid: str) -> bool:
                    p = projects[pid]
                    return p["archived"] is want_archived and p["status"] in statuses

            ids, last = ws.project_index.page(after, keep)
            cache = ws.project_enc
            encs = []
            for pid in ids:
                enc = cache.get(pid)
                if enc is None:
                    enc = cache[pid] = encode_row(projects[pid])
                encs.append(enc)
        return list_body(PROJECTS, encs, last)

    def get(self, project_id: str) -> bytes:
        ws = self.ws
        with ws.lock:
            p = ws.project(project_id)
            return cached(ws.project_enc, project_id, lambda: p)

    def create(self, body: dict[str, Any]) -> str:
        fields = validate_project_create(body)
        ws = self.ws
        with ws.lock:
            t = ws.now()
            pid = ws.new_id("prj_")
            p = {
                "id": pid,
                "name": fields["name"],
                "description": fields["description"],
                "status": fields["status"],
                "start_date": fields["start_date"],
                "end_date": fields["end_date"],
                "created": t,
                "updated": t,
                "archived": False,
                "external_id": fields["external_id"],
                "laanc_number": fields["laanc_number"],
                "created_by": dict(ws.api_key_creator),
                "other_status_reason": fields["other_status_reason"],
            }
            ws.projects[pid] = p
            ws.project_index.add((t, pid))
            ws.project_jobs[pid] = KeyIndex()
            ws.emit("project.created", p)
        return pid

    def touch(self, p: dict[str, Any], changes: dict[str, Any]) -> bool:
        """Apply the changes that differ, bump `updated`; False when nothing changed."""
        changed = {k: v for k, v in changes.items() if p.get(k) != v}
        if not changed:
            return False
        p.update(changed)
        p["updated"] = max(now_ms(), p["updated"] + 1)
        self.ws.project_enc.pop(p["id"], None)
        return True

    def patch(self, project_id: str, body: dict[str, Any]) -> None:
        with self.ws.lock:
            p = self.ws.project(project_id)
            changes = validate_project_patch(body, p)
            if self.touch(p, changes):
                self.ws.emit("project.updated", p)

    def archive(self, project_id: str, body: dict[str, Any]) -> bool:
        with self.ws.lock:
            p = self.ws.project(project_id)
            archived = validate_archive(body)
            if self.touch(p, {"archived": archived}):
                self.ws.emit("project.updated", p)
            return archived

    def delete(self, project_id: str) -> int:
        """Delete a project and cascade to its jobs and their assignments; returns jobs removed."""
        ws = self.ws
        with ws.lock:
            p = ws.project(project_id)
            ws.project_index.remove((p["created"], project_id))
            del ws.projects[project_id]
            ws.project_enc.pop(project_id, None)
            index = ws.project_jobs.pop(project_id, KeyIndex())
            for _, jid in index.keys:
                ws.jobs.pop(jid, None)
                ws.job_enc.pop(jid, None)
                ws.assignments.pop(jid, None)
            return len(index.keys)
