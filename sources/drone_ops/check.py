"""`drone-sync check`: is the configuration usable, what may the key do, what is reachable.

Makes no writes: the scope probe sends a job-type creation with an empty body, which the API
rejects either for the scope (403, read_only key) or for the body (400, full_access key).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from . import settings
from .client import DroneOpsClient
from .exceptions import DroneOpsError


@dataclass
class AccessReport:
    base_url: str
    scope: str = "unknown"
    reachable: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


def check_access(
    base_url: str,
    api_key: str,
    *,
    jobs_path: str = settings.JOBS_PATH_TEMPLATE,
    webhook_ids: list[str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> AccessReport:
    """Reads the first page of every resource the sync walks; raises for a refused key."""
    with DroneOpsClient(
        base_url,
        api_key,
        max_workers=2,
        timeout=10.0,
        max_attempts=3,
        retry_budget_seconds=20.0,
        transport=transport,
    ) as client:
        report = AccessReport(base_url=client.base_url)
        first_project: str | None = None
        lists = {
            "projects": (settings.PROJECTS_PATH, {}, "projects"),
            "archived projects": (settings.PROJECTS_PATH, {"archived": "true"}, "projects"),
            "team_members": (settings.TEAM_PATH, {}, "team"),
            "job_types": (settings.JOB_TYPES_PATH, {}, "job_types"),
        }
        for label, (path, params, key) in lists.items():
            page = client.get_json(path, params)
            items = page.get(key) or []
            report.reachable[label] = f"ok ({len(items)} on the first page)"
            if label == "projects" and items:
                first_project = str(items[0]["id"])
        if first_project is not None:
            path = jobs_path.format(project_id=first_project)
            try:
                page = client.get_json(path)
                report.reachable["jobs"] = (
                    f"ok ({len(page.get('jobs') or [])} in project {first_project})"
                )
            except DroneOpsError as exc:
                report.failures["jobs"] = str(exc)
        hooks = list(webhook_ids or [])
        if not hooks:
            try:
                page = client.get_json(settings.WEBHOOKS_PATH)
                hooks = [str(h["id"]) for h in page.get("webhooks") or []]
                report.reachable["webhooks"] = f"ok ({len(hooks)} on the first page)"
            except DroneOpsError as exc:
                report.failures["webhooks"] = str(exc)
        for webhook_id in hooks:
            try:
                page = client.get_json(settings.WEBHOOK_PATH_TEMPLATE.format(webhook_id=webhook_id))
                report.reachable[f"webhook {webhook_id}"] = (
                    f"ok ({len(page.get('logs') or [])} recent deliveries)"
                )
            except DroneOpsError as exc:
                report.failures[f"webhook {webhook_id}"] = str(exc)
        status, _ = client.probe_status("POST", settings.JOB_TYPES_PATH, {})
        if status == 403:
            report.scope = "read_only"
        elif status == 400:
            report.scope = "full_access"
        return report
