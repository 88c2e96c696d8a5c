"""Jobs of a project: the list, one job, its changes and its pilot assignments.

Generated jobs stay lazy (a key, built into a row when read) until something writes them; an
assignment records how many occurrences within the horizon each pilot was given.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..names import JOBS
from ..occurrences import occurrence_count
from ..validation import validate_job, validate_pilots
from .keyset import cached, decode_cursor, list_body
from .state import Workspace, not_found, now_ms

# a created job's keys in the order the API shows them; fields beyond these follow
_JOB_ORDER = (
    "name",
    "description",
    "type",
    "status",
    "priority",
    "job_pattern",
    "start_date",
    "end_date",
    "latitude",
    "longitude",
    "project_id",
    "inspection_notes",
    "capture_types",
    "external_id",
    "created",
    "updated",
    "other_status_reason",
)


class Jobs:
    """The job operations of the API, over the shared workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def page(self, project_id: str, cursor: str | None) -> bytes:
        after = decode_cursor(JOBS, cursor)
        ws = self.ws
        with ws.lock:
            ws.project(project_id)
            ids, last = ws.project_jobs[project_id].page(after)
            encs = [cached(ws.job_enc, j, partial(ws.job_row, j)) for j in ids]
        return list_body(JOBS, encs, last)

    def get(self, project_id: str, job_id: str) -> bytes:
        ws = self.ws
        with ws.lock:
            ws.job_in(project_id, job_id)
            return cached(ws.job_enc, job_id, partial(ws.job_row, job_id))

    def create(self, project_id: str, body: dict[str, Any]) -> str:
        ws = self.ws
        with ws.lock:
            ws.project(project_id)
            fields = validate_job(body, set(ws.job_types))
            t = ws.now()
            jid = ws.new_id("job_")
            row: dict[str, Any] = {"id": jid}
            fields.update({"project_id": project_id, "created": t, "updated": t})
            for k in _JOB_ORDER:
                row[k] = fields.get(k)
            for k, v in fields.items():
                row.setdefault(k, v)
            ws.jobs[jid] = row
            ws.project_jobs[project_id].add((t, jid))
            return jid

    def patch(self, project_id: str, job_id: str, body: dict[str, Any]) -> None:
        ws = self.ws
        with ws.lock:
            ws.job_in(project_id, job_id)
            cur = ws.job_row(job_id)
            changes = validate_job(body, set(ws.job_types), current=cur)
            changed = {k: v for k, v in changes.items() if cur.get(k) != v}
            if changed:
                row = ws.materialize_job(job_id)
                row.update(changed)
                row["updated"] = max(now_ms(), row["updated"] + 1)
                ws.job_enc.pop(job_id, None)

    def delete(self, project_id: str, job_id: str) -> None:
        ws = self.ws
        with ws.lock:
            ws.job_in(project_id, job_id)
            j = ws.jobs.pop(job_id)
            created = j["created"] if isinstance(j, dict) else j.created
            ws.project_jobs[project_id].remove((created, job_id))
            ws.job_enc.pop(job_id, None)
            ws.assignments.pop(job_id, None)

    def occurrences_of(self, job_id: str) -> int:
        return occurrence_count(self.ws.job_row(job_id), self.ws.horizon_days)

    def assign(self, project_id: str, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        pilots = validate_pilots(body, assign=True)
        ws = self.ws
        with ws.lock:
            ws.job_in(project_id, job_id, "One or more pilots not found")
            for p in pilots:
                m = ws.team.get(p)
                if m is None or m["role"] != "pilot":
                    raise not_found("One or more pilots not found")
            n = self.occurrences_of(job_id)
            current = ws.assignments.setdefault(job_id, {})
            new = [p for p in pilots if p not in current]
            skipped = [p for p in pilots if p in current]
            for p in new:
                current[p] = n
        return {
            "message": f"Assigned {len(new)} pilot(s) to {n} occurrence(s)",
            "results": {"successful": len(new) * n, "skipped": len(skipped) * n, "failed": 0},
            "pilots_assigned": new,
            "pilots_skipped": skipped,
            "occurrences_per_pilot": n,
        }

    def unassign(self, project_id: str, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        pilots = validate_pilots(body, assign=False)
        message = "No pilot assignments found for this job"
        with self.ws.lock:
            self.ws.job_in(project_id, job_id, message)
            current = self.ws.assignments.get(job_id, {})
            removed = [p for p in pilots if p in current]
            if not removed:
                raise not_found(message)
            records = sum(current.pop(p) for p in removed)
        return {
            "message": f"Removed {len(removed)} pilot(s) from the job",
            "pilots_removed": removed,
            "assignments_removed": records,
        }
