"""A small in-memory stand-in for the API, served through httpx.MockTransport.

Unit tests use it to drive the client and the source without a server; end-to-end tests use
the real simulator over HTTP instead.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict, deque
from typing import Any

import httpx

PAGE_SIZE = 2
BASE_URL = "http://127.0.0.1:9"
API_KEY = "unit-test-key"


def project(pid: str, created: int, **fields: Any) -> dict[str, Any]:
    record = {
        "id": pid,
        "name": f"Project {pid}",
        "description": "Wind farm inspection",
        "status": "planned",
        "start_date": "2026-01-01",
        "end_date": None,
        "created": created,
        "updated": created,
        "archived": False,
        "external_id": None,
        "laanc_number": None,
        "created_by": {
            "id": "u1",
            "email": "ana@example.com",
            "first_name": "Ana",
            "last_name": "Lima",
            "profile_picture": None,
        },
    }
    record.update(fields)
    return record


def job(jid: str, pid: str, created: int, **fields: Any) -> dict[str, Any]:
    record = {
        "id": jid,
        "name": f"Job {jid}",
        "description": None,
        "type": "wind_turbine",
        "status": "not_started",
        "priority": "medium",
        "job_pattern": "one_time",
        "start_date": "2026-02-01",
        "end_date": None,
        "latitude": 52.1,
        "longitude": 4.3,
        "project_id": pid,
        "inspection_notes": None,
        "capture_types": ["thermal_inspection"],
        "external_id": None,
        "created": created,
        "updated": created,
        "recurring_frequency": None,
        "recurring_interval": None,
        "selected_days_of_week": None,
        "week_of_month": None,
        "weeks_of_month": None,
        "flights_per_occurrence": None,
    }
    record.update(fields)
    return record


class FakeApi:
    """Holds a workspace and answers the read endpoints the sync uses."""

    def __init__(self) -> None:
        self.projects: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.team: dict[str, dict[str, Any]] = {}
        self.job_types: dict[str, dict[str, Any]] = {}
        self.webhooks: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.forced: dict[str, deque[httpx.Response | Exception]] = defaultdict(deque)
        self.storms: dict[str, int] = {}
        self.requests: list[httpx.Request] = []

    @classmethod
    def small(cls) -> FakeApi:
        api = cls()
        for n in range(1, 4):
            api.projects[f"p{n}"] = project(f"p{n}", 1_700_000_000_000 + n)
        api.projects["p4"] = project("p4", 1_700_000_000_004, archived=True)
        for n in range(1, 6):
            pid = f"p{(n % 3) + 1}"
            api.jobs[f"j{n}"] = job(f"j{n}", pid, 1_700_000_100_000 + n)
        api.team["m1"] = {
            "id": "m1",
            "email": "pilot@example.com",
            "first_name": "Pat",
            "last_name": "Pilot",
            "role": "pilot",
            "status": "active",
            "title": None,
            "phone_number": None,
            "profile_picture": None,
            "created": 1_690_000_000_000,
            "updated": 1_690_000_000_000,
        }
        api.job_types["wind_turbine"] = {
            "id": "wind_turbine",
            "name": "Wind turbine",
            "icon": "wind",
            "is_predefined": True,
        }
        api.webhooks["wh1"] = {
            "id": "wh1",
            "name": "Ops feed",
            "url": "https://hooks.example.com/ops",
            "event_types": ["project.created", "project.updated"],
            "status": "active",
            "failure_count": 0,
            "created": 1_690_000_000_000,
            "updated": 1_690_000_000_000,
            "created_by": {"id": "apikey_1", "type": "api_key", "name": "CI"},
            "last_triggered_at": 1_700_000_000_000,
        }
        for n in range(5):
            api.add_log("wh1", f"log{n}", 1_700_000_000_000 + n * 1000)
        return api

    def add_log(self, webhook_id: str, log_id: str, created: int) -> None:
        payload = {
            "delivery_id": f"d-{log_id}",
            "event": "project.updated",
            "timestamp": created,
            "workspace_id": "ws1",
            "data": {"id": "p1", "status": "planned"},
        }
        self.logs[webhook_id].append(
            {
                "id": log_id,
                "event_type": "project.updated",
                "url": self.webhooks[webhook_id]["url"],
                "status": "success",
                "response_status": 200,
                "response_body": "ok",
                "request_payload": json.dumps(payload),
                "duration_ms": 12,
                "error_message": None,
                "created": created,
            }
        )

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def force(self, path: str, *responses: httpx.Response | Exception) -> None:
        """The next requests to `path` get these answers before the real one."""
        self.forced[path].extend(responses)

    def storm(self, path: str, status: int = 503) -> None:
        """Every request to `path` gets `status` until `calm(path)` (after any forced answers)."""
        self.storms[path] = status

    def calm(self, path: str) -> None:
        self.storms.pop(path, None)

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.url.path == path)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if self.forced[path]:
            answer = self.forced[path].popleft()
            if isinstance(answer, Exception):
                raise answer
            return answer
        if path in self.storms:
            return httpx.Response(self.storms[path], json={"message": "Service Unavailable"})
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return httpx.Response(401, json={"message": "Missing or invalid API key"})
        cursor = request.url.params.get("cursor")
        parts = path.strip("/").split("/")[1:]
        if parts == ["projects"]:
            archived = request.url.params.get("archived") == "true"
            rows = [p for p in self.projects.values() if p["archived"] == archived]
            return self._page("projects", rows, cursor)
        if len(parts) == 2 and parts[0] == "projects":
            found = self.projects.get(parts[1])
            return self._one(found, "Project not found")
        if len(parts) == 3 and parts[0] == "projects" and parts[2] == "jobs":
            if parts[1] not in self.projects:
                return httpx.Response(404, json={"message": "Project not found"})
            rows = [j for j in self.jobs.values() if j["project_id"] == parts[1]]
            return self._page("jobs", rows, cursor)
        if len(parts) == 4 and parts[2] == "jobs":
            found = self.jobs.get(parts[3])
            return self._one(
                found if found and found["project_id"] == parts[1] else None, "Job not found"
            )
        if parts == ["team"]:
            return self._page("team", list(self.team.values()), cursor)
        if len(parts) == 2 and parts[0] == "team":
            member = self.team.get(parts[1])
            if member:
                member = {k: v for k, v in member.items() if k != "status"}
            return self._one(member, "User not found")
        if parts == ["job-types"]:
            return self._page("job_types", list(self.job_types.values()), cursor)
        if len(parts) == 2 and parts[0] == "job-types":
            return self._one(self.job_types.get(parts[1]), "Job Type not found")
        if parts == ["webhooks"]:
            return self._page("webhooks", list(self.webhooks.values()), cursor)
        if len(parts) == 2 and parts[0] == "webhooks":
            hook = self.webhooks.get(parts[1])
            if hook is None:
                return httpx.Response(404, json={"message": "Webhook not found"})
            logs = sorted(self.logs[parts[1]], key=lambda e: (e["created"], e["id"]), reverse=True)
            page = self._slice(logs, cursor)
            return httpx.Response(
                200,
                json={
                    "webhook": hook,
                    "logs": page[0],
                    "log_count": len(page[0]),
                    "cursor": page[1],
                },
            )
        return httpx.Response(404, json={"message": "Not found"})

    @staticmethod
    def _one(found: dict[str, Any] | None, message: str) -> httpx.Response:
        if found is None:
            return httpx.Response(404, json={"message": message})
        return httpx.Response(200, json=found)

    @staticmethod
    def _slice(
        rows: list[dict[str, Any]], cursor: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        start = int(base64.urlsafe_b64decode(cursor).decode()) if cursor else 0
        page = rows[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(rows)
        next_cursor = (
            base64.urlsafe_b64encode(str(start + PAGE_SIZE).encode()).decode() if more else None
        )
        return page, next_cursor

    def _page(self, key: str, rows: list[dict[str, Any]], cursor: str | None) -> httpx.Response:
        rows = sorted(rows, key=lambda r: (r.get("created", 0), r["id"]))
        page, next_cursor = self._slice(rows, cursor)
        return httpx.Response(200, json={key: page, "count": len(page), "cursor": next_cursor})
