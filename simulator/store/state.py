"""The workspace's rows, their indexes and caches, and what every operation on them shares.

`Workspace` is the explicit context the store's collaborators (projects, jobs, job types, team,
webhooks, deliveries, churn) are built with: it holds the data and the lock, the run-time clock
and id stream, and the lookups that several of them need (a project, a job inside its project,
a webhook), each raising the API's 404.
"""

from __future__ import annotations

import copy
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import orjson

from ..generator import SCALES, Counts, Generator
from ..jobs import LazyJob
from ..names import JOB_TYPES, JOBS, LOGS, PROJECTS, TEAM, WEBHOOKS
from ..occurrences import DEFAULT_HORIZON_DAYS
from ..validation import ApiError, today_utc
from .keyset import KeyIndex, decode_cursor, list_body
from .webhook_log import WebhookLog


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


@dataclass
class Options:
    """Everything that decides the generated workspace."""

    seed: int = 42
    scale: str = "tiny"
    anchor: date | None = None
    horizon_days: int = DEFAULT_HORIZON_DAYS
    projects: int | None = None
    jobs_per_project: int | None = None
    members: int | None = None
    webhooks: int | None = None
    logs_per_webhook: int | None = None

    def counts(self) -> Counts:
        base = SCALES[self.scale]
        return Counts(
            projects=base.projects if self.projects is None else self.projects,
            jobs_per_project=base.jobs_per_project
            if self.jobs_per_project is None
            else self.jobs_per_project,
            members=base.members if self.members is None else self.members,
            webhooks=base.webhooks if self.webhooks is None else self.webhooks,
            logs_per_webhook=base.logs_per_webhook
            if self.logs_per_webhook is None
            else self.logs_per_webhook,
            custom_job_types=base.custom_job_types,
        )


class Workspace:
    """Rows, ordering indexes, encoding caches, assignments, the lock and the event hook.

    Generated from the options' seed; rows created at run time get ids from a seeded stream
    (drawn under the lock), so a replayed sequence of requests gets the same ids.
    """

    def __init__(self, options: Options, full_key_label: str) -> None:
        self.options = options
        self.horizon_days = options.horizon_days
        self.lock = threading.RLock()
        self.gen = gen = Generator(options.seed, options.counts(), options.anchor or today_utc())
        self._ids = random.Random(f"{options.seed}:runtime-ids")
        self.workspace_id = gen.workspace_id
        self.api_key_creator = {
            "id": "apikey_" + f"{self._ids.getrandbits(48):012x}",
            "type": "api_key",
            "name": full_key_label,
        }
        self.on_event: Callable[[str, dict[str, Any]], None] | None = None
        self._last_ms = 0
        self._load_team()
        self._load_job_types()
        self._load_projects_and_jobs()
        self._load_webhooks()

    # -- generation ----------------------------------------------------------------------------
    def _load_team(self) -> None:
        self.team = {m["id"]: m for m in self.gen.build_team()}
        # API keys are issued by the workspace's root member: a webhook created with the key
        # shows that member (spec 2.5 gives webhooks no API-key creator), a project the key
        root = self.gen.team[0]
        self.key_owner = {k: root[k] or "" for k in ("id", "email", "first_name", "last_name")}
        self.team_index = KeyIndex((m["created"], m["id"]) for m in self.team.values())
        self.team_enc: dict[str, bytes] = {}
        self.member_enc: dict[str, bytes] = {}

    def _load_job_types(self) -> None:
        self.job_types: dict[str, dict[str, Any]] = {}
        self.job_type_created: dict[str, int] = {}
        for created, jt in self.gen.build_job_types():
            self.job_types[jt["id"]] = jt
            self.job_type_created[jt["id"]] = created
        self.job_type_index = KeyIndex((c, i) for i, c in self.job_type_created.items())

    def _load_projects_and_jobs(self) -> None:
        self.projects = {p["id"]: p for p in self.gen.build_projects()}
        self.project_index = KeyIndex((p["created"], p["id"]) for p in self.projects.values())
        self.project_enc: dict[str, bytes] = {}
        self.jobs: dict[str, dict[str, Any] | LazyJob] = {}
        self.project_jobs: dict[str, KeyIndex] = {pid: KeyIndex() for pid in self.projects}
        for jid, lj in self.gen.job_keys():
            self.jobs[jid] = lj
            self.project_jobs[lj.project_id].keys.append((lj.created, jid))
        for ki in self.project_jobs.values():
            ki.keys.sort()
        self.job_enc: dict[str, bytes] = {}
        self.assignments: dict[str, dict[str, int]] = {}

    def _load_webhooks(self) -> None:
        self.webhooks: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, WebhookLog] = {}
        self.webhook_by_index: list[dict[str, Any]] = []
        for wh, keys in self.gen.webhooks():
            self.logs[wh["id"]] = WebhookLog(len(self.webhook_by_index), keys)
            self.webhook_by_index.append(copy.deepcopy(wh))
            self.add_webhook_row(wh)
            wh["failure_count"] = sum(1 for _, lk in keys if lk.failed)
            if keys:
                wh["last_triggered_at"] = keys[-1][1].created
                wh["updated"] = max(wh["updated"], keys[-1][1].created)
        self.webhook_index = KeyIndex((w["created"], w["id"]) for w in self.webhooks.values())

    # -- shared by the operations (callers hold the lock) ----------------------------------------
    def now(self) -> int:
        """Current ms, strictly increasing so new rows never tie on `created`."""
        t = max(now_ms(), self._last_ms + 1)
        self._last_ms = t
        return t

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{self._ids.getrandbits(64):016x}"

    def emit(self, event: str, project: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(event, dict(project))

    def add_webhook_row(self, wh: dict[str, Any]) -> None:
        self.webhooks[wh["id"]] = wh
        self.logs.setdefault(wh["id"], WebhookLog())

    def project(self, project_id: str) -> dict[str, Any]:
        p = self.projects.get(project_id)
        if p is None:
            raise not_found("Project not found")
        return p

    def job_owner(self, job_id: str) -> str | None:
        """The project a job belongs to, None when there is no such job."""
        j = self.jobs.get(job_id)
        if j is None:
            return None
        return j.project_id if isinstance(j, LazyJob) else j["project_id"]

    def job_in(self, project_id: str, job_id: str, message: str = "Job not found") -> None:
        """404 with `message` unless the job exists and belongs to the project."""
        if self.job_owner(job_id) != project_id:
            raise not_found(message)

    def job_row(self, job_id: str) -> dict[str, Any]:
        """A job's row, generated on the fly when it has never been written."""
        j = self.jobs[job_id]
        if isinstance(j, LazyJob):
            return self.gen.job(j, job_id)
        return j

    def materialize_job(self, job_id: str) -> dict[str, Any]:
        """A job's row kept as a dict, so it can be changed in place."""
        row = self.job_row(job_id)
        self.jobs[job_id] = row
        return row

    def webhook(self, webhook_id: str) -> dict[str, Any]:
        wh = self.webhooks.get(webhook_id)
        if wh is None:
            raise not_found("Webhook not found")
        return wh

    def plain_page(
        self, tag: str, index: KeyIndex, rows: Mapping[str, Any], cursor: str | None
    ) -> bytes:
        """A page of a list whose rows are encoded on every request, not cached: short lists
        (job types, webhooks) where the cache would save little."""
        after = decode_cursor(tag, cursor)
        with self.lock:
            ids, last = index.page(after)
            encs = [orjson.dumps(rows[i]) for i in ids]
        return list_body(tag, encs, last)

    # -- whole-workspace reads -------------------------------------------------------------------
    def example_ids(self) -> dict[str, str]:
        """Ids of real generated rows, used as OpenAPI examples (path ids, a pilot to assign)."""
        with self.lock:
            out: dict[str, str] = {"jobTypeId": "wind_turbine"}
            for _, pid in self.project_index.keys:
                jobs = self.project_jobs[pid].keys
                if jobs:
                    out["projectId"], out["jobId"] = pid, jobs[0][1]
                    break
            if self.team_index.keys:
                out["teamMemberId"] = self.team_index.keys[0][1]
            if self.webhook_index.keys:
                out["webhookId"] = self.webhook_index.keys[0][1]
            pilot = next((m for m in self.team.values() if m["role"] == "pilot"), None)
            if pilot is not None:
                out["pilotId"] = pilot["id"]
            return out

    def counts(self) -> dict[str, int]:
        """Rows per list (and active projects), for tests and benchmarks."""
        with self.lock:
            return {
                PROJECTS: len(self.projects),
                "projects_active": sum(1 for p in self.projects.values() if not p["archived"]),
                JOBS: len(self.jobs),
                JOB_TYPES: len(self.job_types),
                TEAM: len(self.team),
                WEBHOOKS: len(self.webhooks),
                LOGS: sum(len(v) for v in self.logs.values()),
            }
