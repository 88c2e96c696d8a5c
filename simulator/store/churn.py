"""Admin churn: deterministic background change, as if people edited the workspace in the
dashboard, so tests and benchmarks can sync a workspace that changed between runs.

Churn emits no events (dashboard edits here are not webhook-visible), but it can append
delivery-log entries for the projects it updated, as if their deliveries had happened.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..rules import STATUSES
from .delivery_log import DeliveryLog
from .jobs import Jobs
from .projects import Projects
from .state import Workspace, now_ms

# churn never sets `other`, which needs a reason
_STATUSES = [s for s in STATUSES if s != "other"]


@dataclass(frozen=True)
class ChurnPlan:
    """How much one churn call changes: fractions of the rows there are."""

    seed: int = 0
    update_fraction: float = 0.01
    delete_fraction: float = 0.001
    new_deliveries_per_webhook: int = 0


class Churn:
    """Changes rows through the same operations the API uses, under the store lock."""

    def __init__(
        self, ws: Workspace, projects: Projects, jobs: Jobs, delivery_log: DeliveryLog
    ) -> None:
        self.ws = ws
        self.projects = projects
        self.jobs = jobs
        self.delivery_log = delivery_log

    def run(self, plan: ChurnPlan) -> dict[str, int]:
        """Update, then delete, then log deliveries, each drawn from one seeded stream."""
        rng = random.Random(f"churn:{plan.seed}")
        ws = self.ws
        with ws.lock:
            pids = [k[1] for k in ws.project_index.keys]
            jids = sorted(ws.jobs)
            n_pu = round(len(pids) * plan.update_fraction)
            n_ju = round(len(jids) * plan.update_fraction)
            n_pd = round(len(pids) * plan.delete_fraction)
            n_jd = round(len(jids) * plan.delete_fraction)
            updated = self._update_projects(rng, rng.sample(pids, n_pu))
            job_updates = self._update_jobs(rng, rng.sample(jids, n_ju))
            deleted_projects = rng.sample(pids, n_pd)
            cascaded = sum(self.projects.delete(pid) for pid in deleted_projects)
            candidates = rng.sample(jids, min(n_jd + len(deleted_projects), len(jids)))
            jobs_deleted = self._delete_jobs(candidates, n_jd)
            logs_added = self._log_deliveries(rng, updated, plan.new_deliveries_per_webhook)
        return {
            "projects_updated": n_pu,
            "jobs_updated": job_updates,
            "projects_deleted": len(deleted_projects),
            "jobs_deleted": jobs_deleted,
            "jobs_deleted_by_cascade": cascaded,
            "logs_added": logs_added,
        }

    def _update_projects(self, rng: random.Random, pids: list[str]) -> list[str]:
        for pid in pids:
            p = self.ws.projects[pid]
            self.projects.touch(
                p,
                {
                    "status": rng.choice(_STATUSES),
                    "other_status_reason": None,
                    "name": (p["name"][:90] + f" (rev {rng.randrange(100)})")[:100],
                },
            )
        return pids

    def _update_jobs(self, rng: random.Random, jids: list[str]) -> int:
        for jid in jids:
            row = self.ws.materialize_job(jid)
            row["status"] = rng.choice(_STATUSES)
            row["other_status_reason"] = None
            row["priority"] = rng.choice(("low", "medium", "high"))
            row["updated"] = max(now_ms(), row["updated"] + 1)
            self.ws.job_enc.pop(jid, None)
        return len(jids)

    def _delete_jobs(self, candidates: list[str], wanted: int) -> int:
        """Delete up to `wanted` of the candidates that still exist (a deleted project's jobs
        are gone already)."""
        deleted = 0
        for jid in candidates:
            if deleted >= wanted:
                break
            owner = self.ws.job_owner(jid)
            if owner is None:
                continue
            self.jobs.delete(owner, jid)
            deleted += 1
        return deleted

    def _log_deliveries(self, rng: random.Random, updated: list[str], per_webhook: int) -> int:
        """Deliveries report the projects as they are now, updates only (a project is created
        once); the ones just edited first."""
        ws = self.ws
        touched = [pid for pid in updated if pid in ws.projects] or list(ws.projects)
        added = 0
        for wid, wh in list(ws.webhooks.items()):
            if not touched or "project.updated" not in wh["event_types"]:
                continue
            for _ in range(per_webhook):
                event = "project.updated"
                data = ws.projects[rng.choice(touched)]
                failed = rng.random() < 0.05
                self.delivery_log.record(
                    wid,
                    event=event,
                    url=wh["url"],
                    payload=self.delivery_log.event_payload(event, data),
                    response_status=500 if failed else 200,
                    response_body="Internal Server Error" if failed else '{"ok":true}',
                    duration_ms=30 + rng.randrange(300),
                    error="Receiver responded with HTTP 500" if failed else None,
                )
                added += 1
        return added
