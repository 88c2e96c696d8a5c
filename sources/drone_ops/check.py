"""`drone-sync check`: is the configuration usable, what may the key do, what is reachable.

Makes no writes: the scope probe sends a job-type creation with an empty body, which the API
rejects either for the scope (403, read_only key) or for the body (400, full_access key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from .config import SourceConfig
from .exceptions import DroneOpsError
from .http import DroneOpsClient
from .tables.entities import (
    ENTITIES,
    JOB_TYPES,
    JOBS,
    PROJECTS,
    WEBHOOK_DELIVERIES,
    WEBHOOKS_TABLE,
    Entity,
)


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
    config: SourceConfig, *, transport: httpx.BaseTransport | None = None
) -> AccessReport:
    """Reads the first page of every resource the sync walks; raises for a refused key."""
    jobs_path, webhook_ids = config.jobs_path, config.webhook_ids
    with DroneOpsClient(
        config.base_url,
        config.api_key,
        max_workers=2,
        timeout=10.0,
        max_attempts=3,
        retry_budget_seconds=20.0,
        transport=transport,
        key_setting=config.key_setting,
        url_setting=config.url_setting,
    ) as client:
        report = AccessReport(base_url=client.base_url)
        first_project: str | None = None
        for entity, params in _plain_lists():
            path, key = str(entity.list_path), str(entity.items_key)
            page = client.get_json(path, params)
            items = page.get(key) or []
            label = f"archived {entity.table}" if params.get("archived") else entity.table
            report.reachable[label] = f"ok ({len(items)} on the first page)"
            if entity is PROJECTS and not params and items:
                first_project = str(items[0]["id"])
        if first_project is not None:
            path = jobs_path.format(project_id=first_project)
            try:
                page = client.get_json(path)
                count = len(page.get(str(JOBS.items_key)) or [])
                report.reachable["jobs"] = f"ok ({count} in project {first_project})"
            except DroneOpsError as exc:
                report.failures["jobs"] = str(exc)
        hooks = list(webhook_ids or [])
        if not hooks:
            try:
                page = client.get_json(str(WEBHOOKS_TABLE.list_path))
                hooks = [str(h["id"]) for h in page.get(str(WEBHOOKS_TABLE.items_key)) or []]
                report.reachable["webhooks"] = f"ok ({len(hooks)} on the first page)"
            except DroneOpsError as exc:
                report.failures["webhooks"] = str(exc)
        for webhook_id in hooks:
            try:
                path = str(WEBHOOK_DELIVERIES.list_path).format(webhook_id=webhook_id)
                page = client.get_json(path)
                count = len(page.get(str(WEBHOOK_DELIVERIES.items_key)) or [])
                report.reachable[f"webhook {webhook_id}"] = f"ok ({count} recent deliveries)"
            except DroneOpsError as exc:
                report.failures[f"webhook {webhook_id}"] = str(exc)
        status, _ = client.probe_status("POST", str(JOB_TYPES.list_path), {})
        if status == 403:
            report.scope = "read_only"
        elif status == 400:
            report.scope = "full_access"
        return report


def _plain_lists() -> list[tuple[Entity, Mapping[str, str]]]:
    """The first page of every top-level list the walk reads, projects first (the job probe
    needs one), then each list with no records under it (the webhook list comes last)."""
    return [
        (entity, params)
        for entity in ENTITIES.values()
        if entity.list_path is not None and entity.parent is None and entity is not WEBHOOKS_TABLE
        for params in entity.list_variants
    ]
