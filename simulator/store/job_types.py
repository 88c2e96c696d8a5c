"""Job types: the configured kinds of work, which a created or changed job's `type` must be one
of (the predefined ones plus those created through the API)."""

from __future__ import annotations

from typing import Any

import orjson

from ..names import JOB_TYPES
from ..validation import validate_job_type
from .state import Workspace, not_found


class JobTypes:
    """The job type operations of the API, over the shared workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def page(self, cursor: str | None) -> bytes:
        return self.ws.plain_page(JOB_TYPES, self.ws.job_type_index, self.ws.job_types, cursor)

    def ids(self) -> list[str]:
        """Configured job type ids in list order (the enum of a job's `type`)."""
        with self.ws.lock:
            return [k[1] for k in self.ws.job_type_index.keys]

    def get(self, type_id: str) -> bytes:
        with self.ws.lock:
            jt = self.ws.job_types.get(type_id)
            if jt is None:
                raise not_found("Job Type not found")
            return orjson.dumps(jt)

    def create(self, body: dict[str, Any]) -> str:
        name, icon = validate_job_type(body)
        ws = self.ws
        with ws.lock:
            t = ws.now()
            tid = ws.new_id("jt_")
            ws.job_types[tid] = {"id": tid, "name": name, "icon": icon, "is_predefined": False}
            ws.job_type_created[tid] = t
            ws.job_type_index.add((t, tid))
            return tid
