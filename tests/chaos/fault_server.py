"""A small HTTP server on 127.0.0.1 for chaos cases the simulator cannot produce.

Two apps run on it:
- `Workspace` serves the API's list and single-record shapes from fixtures built here, so a
  case can plant one defect (a bad value, a missing id, a cursor that never ends...);
- `Proxy` forwards to a running simulator and injects faults by rule on chosen paths only
  (a 429 whose Retry-After is an HTTP date, a body dripped slowly, a 502 on single-record
  reads), which the simulator's own fault switch (every GET alike) cannot express.

Every server listens on 127.0.0.1 only, answers each request on its own connection
(`Connection: close`), refuses to serve more than `max_requests` (400, so a runaway walk ends
at once), and is stopped through its own handle (`stop()` / the context manager).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

DRIP_STEP_SECONDS = 0.1


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drip_seconds: float = 0.0
    """Send the body spread evenly over this many seconds (a slow drip)."""
    delay_seconds: float = 0.0
    """Wait this long before sending anything (a server that hangs, then answers)."""
    reset_after: int | None = None
    """Announce the whole body, send this many bytes of it, then drop the connection."""

    @staticmethod
    def json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        return Reply(
            status,
            json.dumps(body).encode(),
            {"Content-Type": "application/json", **(headers or {})},
        )

    @staticmethod
    def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        return Reply.json({"message": message}, status, headers)


App = Callable[[Request], Reply]


@dataclass(frozen=True)
class Served:
    at: float
    """When the request arrived (epoch seconds)."""
    method: str
    path: str
    query: dict[str, str]
    status: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FaultServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 1_048_576))
        request = Request(
            method,
            parts.path,
            dict(parse_qsl(parts.query)),
            {name.lower(): value for name, value in self.headers.items()},
        )
        reply = self.server.owner.dispatch(request)
        self.close_connection = True
        if reply.delay_seconds > 0 and self.server.owner.stopping.wait(reply.delay_seconds):
            return
        try:
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if reply.reset_after is not None:
                self.wfile.write(reply.body[: reply.reset_after])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            elif reply.drip_seconds > 0 and reply.body:
                self._drip(reply.body, reply.drip_seconds)
            else:
                self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up on this response: that is its right

    def _drip(self, body: bytes, seconds: float) -> None:
        steps = max(1, int(seconds / DRIP_STEP_SECONDS))
        size = -(-len(body) // steps)
        stopping = self.server.owner.stopping
        for start in range(0, len(body), size):
            self.wfile.write(body[start : start + size])
            self.wfile.flush()
            if stopping.wait(DRIP_STEP_SECONDS):
                return

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FaultServer:
    """Serves `app` on 127.0.0.1 in a background thread; counts what it served."""

    def __init__(self, app: App, *, max_requests: int = 5_000) -> None:
        self.app = app
        self.max_requests = max_requests
        self.stopping = threading.Event()
        self.served: list[Served] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="chaos-fault-server",
            daemon=True,
        )
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host!s}:{port}"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def dispatch(self, request: Request) -> Reply:
        arrived = time.time()
        with self._lock:
            over = len(self.served) >= self.max_requests
        if over:
            reply = Reply.error(
                400, f"chaos fault server: request cap of {self.max_requests} reached"
            )
        else:
            try:
                reply = self.app(request)
            except Exception as exc:  # a bug in a fixture must be visible, not a hang
                reply = Reply.error(599, f"fault server app error: {type(exc).__name__}: {exc}")
        with self._lock:
            self.served.append(
                Served(arrived, request.method, request.path, request.query, reply.status)
            )
        return reply

    def count(self, path_pattern: str = ".*") -> int:
        pattern = re.compile(path_pattern)
        with self._lock:
            return sum(1 for s in self.served if pattern.fullmatch(s.path))

    def paths(self) -> Counter[str]:
        with self._lock:
            return Counter(s.path for s in self.served)


# -- a proxy to the simulator with rules ---------------------------------------------------


Forward = Callable[[Request], Reply]


@dataclass
class Rule:
    """Applies `action` to GETs whose path fully matches `path`, with `probability`, at most
    `limit` times (None: unlimited)."""

    path: str
    probability: float
    action: Callable[[Request, Forward], Reply]
    limit: int | None = None
    applied: int = 0

    def matches(self, request: Request) -> bool:
        return request.method == "GET" and re.fullmatch(self.path, request.path) is not None


def injected_status(status: int) -> Callable[[Request, Forward], Reply]:
    def action(request: Request, forward: Forward) -> Reply:
        return Reply.error(status, f"chaos proxy: injected {status}")

    return action


def retry_after_date(seconds: float, issued: list[tuple[float, float]]) -> Callable[..., Reply]:
    """A 429 whose Retry-After is an HTTP date `seconds` ahead (whole seconds, as the format
    has); (sent at, retry after) pairs are appended to `issued`."""

    def action(request: Request, forward: Forward) -> Reply:
        now = time.time()
        when = float(int(now + seconds)) + 1.0
        issued.append((now, when))
        return Reply.error(429, "Too many requests", {"Retry-After": formatdate(when, usegmt=True)})

    return action


def slow_drip(seconds: float) -> Callable[[Request, Forward], Reply]:
    """The real response, its body dribbled out over `seconds` (each chunk well within any
    read timeout, so only a deadline on the whole response can cut it short)."""

    def action(request: Request, forward: Forward) -> Reply:
        reply = forward(request)
        reply.drip_seconds = seconds
        return reply

    return action


def truncated() -> Callable[[Request, Forward], Reply]:
    """The real 200 response cut to half its body (with a matching Content-Length), as the
    simulator's `truncate` fault sends it."""

    def action(request: Request, forward: Forward) -> Reply:
        reply = forward(request)
        if reply.status == 200:
            reply.body = reply.body[: max(1, len(reply.body) // 2)]
        return reply

    return action


def hang(seconds: float) -> Callable[[Request, Forward], Reply]:
    """The real response, sent only after `seconds` of silence (a read timeout, for a client
    whose timeout is shorter)."""

    def action(request: Request, forward: Forward) -> Reply:
        reply = forward(request)
        reply.delay_seconds = seconds
        return reply

    return action


def latency(low: float, high: float, seed: int = 0) -> Callable[[Request, Forward], Reply]:
    """The real response after a seeded random pause (to stretch a walk over time)."""
    rng = random.Random(f"chaos-latency:{seed}")
    lock = threading.Lock()

    def action(request: Request, forward: Forward) -> Reply:
        with lock:
            pause = rng.uniform(low, high)
        reply = forward(request)
        reply.delay_seconds = pause
        return reply

    return action


class Proxy:
    """Forwards GETs to `upstream` (the simulator), applying the first matching rule that
    fires; a seeded stream decides, so a case replays the same way."""

    def __init__(self, upstream: str, rules: list[Rule], seed: int = 0) -> None:
        self.rules = rules
        self._rng = random.Random(f"chaos-proxy:{seed}")
        self._lock = threading.Lock()
        self._client = httpx.Client(base_url=upstream, timeout=30, trust_env=False)

    def close(self) -> None:
        self._client.close()

    def forward(self, request: Request) -> Reply:
        headers = {k: v for k, v in request.headers.items() if k in ("authorization", "accept")}
        response = self._client.request(
            request.method, request.path, params=request.query, headers=headers
        )
        kept = {
            name: response.headers[name]
            for name in ("content-type", "retry-after")
            if name in response.headers
        }
        return Reply(response.status_code, response.content, kept)

    def __call__(self, request: Request) -> Reply:
        for rule in self.rules:
            if not rule.matches(request):
                continue
            with self._lock:
                fire = (rule.limit is None or rule.applied < rule.limit) and (
                    self._rng.random() < rule.probability
                )
                if fire:
                    rule.applied += 1
            if fire:
                return rule.action(request, self.forward)
        return self.forward(request)


class KeyedFaults:
    """The simulator's fault kinds, in the simulator's shapes, decided per request by a hash of
    (seed, request, how many times this request was made before) instead of one shared random
    stream: the same request meets the same faults in the same order however the sync's
    threads interleave, so a case passes or fails the same way on every run.

    Like the simulator: GETs under /v1 only; `set("kind:p,...")` switches faults on, `set(None)`
    off."""

    def __init__(self, upstream: str, seed: int = 0) -> None:
        self.seed = seed
        self._proxy = Proxy(upstream, [])
        self._lock = threading.Lock()
        self._kinds: list[tuple[str, float]] = []
        self._seen: Counter[str] = Counter()
        self.drawn: Counter[str] = Counter()

    def set(self, spec: str | None) -> None:
        from drone_ops_sync.simulator.faults import parse_faults

        kinds = parse_faults(spec)
        with self._lock:
            self._kinds = kinds

    def close(self) -> None:
        self._proxy.close()

    def _draw(self, request: Request) -> str | None:
        key = f"{request.method} {request.path}?{sorted(request.query.items())}"
        with self._lock:
            kinds = self._kinds
            occurrence = self._seen[key]
            self._seen[key] += 1
        if not kinds:
            return None
        digest = hashlib.blake2b(f"{self.seed}|{key}|{occurrence}".encode(), digest_size=8)
        u = int.from_bytes(digest.digest(), "big") / 2**64
        total = 0.0
        for kind, probability in kinds:
            total += probability
            if u < total:
                with self._lock:
                    self.drawn[kind] += 1
                return kind
        return None

    def __call__(self, request: Request) -> Reply:
        fault = None
        if request.method == "GET" and request.path.startswith("/v1/"):
            fault = self._draw(request)
        if fault == "429":
            return Reply.error(429, "Too many requests", {"Retry-After": "1"})
        if fault in ("500", "502", "503"):
            return Reply.error(int(fault), "Simulated server error")
        reply = self._proxy.forward(request)
        if reply.status == 200 and fault == "truncate":
            reply.body = reply.body[: max(1, len(reply.body) // 2)]
        elif reply.status == 200 and fault == "reset":
            reply.reset_after = max(1, len(reply.body) // 2)
        return reply


# -- a fixture workspace ----------------------------------------------------------------------

PageHook = Callable[[Request, dict[str, Any]], "dict[str, Any] | Reply"]


def _creator(number: int) -> dict[str, Any]:
    return {
        "id": f"usr_{number}",
        "email": f"pilot{number}@example.com",
        "first_name": f"First{number}",
        "last_name": f"Last{number}",
        "profile_picture": None,
    }


def project_record(number: int, *, archived: bool = False, **fields: Any) -> dict[str, Any]:
    created = 1_767_225_600_000 + number * 3_600_000
    record: dict[str, Any] = {
        "id": f"prj_{number:03d}",
        "name": f"Wind farm {number}",
        "description": "Blade inspection of the north array",
        "status": "planned",
        "start_date": "2026-02-01",
        "end_date": "2026-03-01",
        "created": created,
        "updated": created + 1_000,
        "archived": archived,
        "external_id": None,
        "laanc_number": None,
        "created_by": _creator(number % 2),
        "other_status_reason": None,
    }
    record.update(fields)
    return record


def job_record(number: int, project_id: str, **fields: Any) -> dict[str, Any]:
    created = 1_767_312_000_000 + number * 60_000
    record: dict[str, Any] = {
        "id": f"job_{number:03d}",
        "name": f"Turbine {number} sweep",
        "description": None,
        "type": "wind_turbine",
        "status": "not_started",
        "other_status_reason": None,
        "priority": "medium",
        "job_pattern": "recurring",
        "start_date": "2026-02-02",
        "end_date": None,
        "latitude": 52.0 + number / 100,
        "longitude": 4.0 + number / 100,
        "project_id": project_id,
        "inspection_notes": None,
        "capture_types": ["thermal_inspection", "photos"],
        "external_id": None,
        "created": created,
        "updated": created,
        "recurring_frequency": "weekly",
        "recurring_interval": 1,
        "selected_days_of_week": [1, 3],
        "week_of_month": None,
        "weeks_of_month": None,
        "flights_per_occurrence": 2,
    }
    record.update(fields)
    return record


def member_record(number: int, **fields: Any) -> dict[str, Any]:
    created = 1_767_000_000_000 + number * 86_400_000
    record: dict[str, Any] = {
        "id": f"usr_{number}",
        "email": f"pilot{number}@example.com",
        "first_name": f"First{number}",
        "last_name": f"Last{number}",
        "role": "pilot" if number else "root",
        "status": "active",
        "title": None,
        "phone_number": None,
        "profile_picture": None,
        "created": created,
        "updated": created,
    }
    record.update(fields)
    return record


def delivery_record(number: int, webhook_id: str, project: dict[str, Any]) -> dict[str, Any]:
    created = 1_767_400_000_000 + number * 1_000
    payload = {
        "delivery_id": f"dlv_{number:04d}",
        "event": "project.updated",
        "timestamp": created - 5,
        "workspace_id": "ws_chaos",
        "data": {"id": project["id"], "name": project["name"], "status": project["status"]},
    }
    return {
        "id": f"whl_{number:04d}",
        "event_type": "project.updated",
        "url": "https://hooks.example.com/drone",
        "status": "success",
        "response_status": 200,
        "response_body": '{"ok":true}',
        "request_payload": json.dumps(payload, separators=(",", ":")),
        "duration_ms": 40 + number,
        "error_message": None,
        "created": created,
    }


class Workspace:
    """Serves a small workspace in the API's shapes, `page_size` records per page.

    The record lists are served as they are, so a defect planted in them (a record listed
    twice, a job under a second project, a value of the wrong type) reaches the sync exactly;
    `hooks` rewrite individual pages (cursors, whole bodies)."""

    def __init__(self, key: str, page_size: int = 2) -> None:
        self.key = key
        self.page_size = page_size
        self.hooks: list[PageHook] = []
        self._lock = threading.Lock()
        live = [project_record(n) for n in range(1, 5)]
        self.projects: list[dict[str, Any]] = [*live, project_record(5, archived=True)]
        self.jobs: dict[str, list[dict[str, Any]]] = {}
        number = 0
        for project in self.projects:
            self.jobs[project["id"]] = []
            for _ in range(3):
                number += 1
                self.jobs[project["id"]].append(job_record(number, project["id"]))
        self.job_types: list[dict[str, Any]] = [
            {"id": "wind_turbine", "name": "Wind turbine", "icon": "wind", "is_predefined": True},
            {"id": "cell_tower", "name": "Cell tower", "icon": "radio", "is_predefined": True},
            {"id": "jt_custom1", "name": "Dam wall", "icon": "settings", "is_predefined": False},
        ]
        self.team: list[dict[str, Any]] = [member_record(n) for n in range(3)]
        self.webhooks: list[dict[str, Any]] = [
            {
                "id": "wh_001",
                "name": "Ops feed",
                "url": "https://hooks.example.com/drone",
                "event_types": ["project.created", "project.updated"],
                "status": "active",
                "failure_count": 0,
                "created": 1_767_000_500_000,
                "updated": 1_767_400_005_000,
                "created_by": _creator(0),
                "last_triggered_at": 1_767_400_005_000,
            }
        ]
        # newest first, as the API orders logs
        self.logs: dict[str, list[dict[str, Any]]] = {
            "wh_001": [delivery_record(n, "wh_001", live[n % len(live)]) for n in range(5, 0, -1)]
        }

    # -- serving -----------------------------------------------------------------------------

    def __call__(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return Reply.error(401, "Missing or invalid API key")
        if request.method != "GET":
            return Reply.error(405, "Method not allowed")
        with self._lock:
            return self._route(request)

    def _route(self, request: Request) -> Reply:
        parts = request.path.strip("/").split("/")
        if parts[:1] != ["v1"]:
            return Reply.error(404, "Not found")
        parts = parts[1:]
        cursor = request.query.get("cursor")
        if parts == ["projects"]:
            archived = request.query.get("archived") == "true"
            items = [p for p in self.projects if bool(p.get("archived")) is archived]
            return self._page(request, "projects", items, cursor)
        if len(parts) == 2 and parts[0] == "projects":
            found = self._find(self.projects, parts[1])
            return Reply.json(found) if found else Reply.error(404, "Project not found")
        if len(parts) == 3 and parts[0] == "projects" and parts[2] == "jobs":
            if not self._find(self.projects, parts[1]):
                return Reply.error(404, "Project not found")
            return self._page(request, "jobs", self.jobs.get(parts[1], []), cursor)
        if len(parts) == 4 and parts[0] == "projects" and parts[2] == "jobs":
            job = self._find(self.jobs.get(parts[1], []), parts[3])
            return Reply.json(job) if job else Reply.error(404, "Job not found")
        if parts == ["job-types"]:
            return self._page(request, "job_types", self.job_types, cursor)
        if len(parts) == 2 and parts[0] == "job-types":
            found = self._find(self.job_types, parts[1])
            return Reply.json(found) if found else Reply.error(404, "Job Type not found")
        if parts == ["team"]:
            return self._page(request, "team", self.team, cursor)
        if len(parts) == 2 and parts[0] == "team":
            found = self._find(self.team, parts[1])
            if not found:
                return Reply.error(404, "User not found")
            return Reply.json({k: v for k, v in found.items() if k != "status"})
        if parts == ["webhooks"]:
            return self._page(request, "webhooks", self.webhooks, cursor)
        if len(parts) == 2 and parts[0] == "webhooks":
            hook = self._find(self.webhooks, parts[1])
            if not hook:
                return Reply.error(404, "Webhook not found")
            entries, next_cursor = self._slice(self.logs.get(parts[1], []), cursor)
            if entries is None:
                return Reply.error(400, "Invalid cursor")
            body = {"webhook": hook, "logs": entries, "log_count": len(entries)}
            return self._hooked(request, {**body, "cursor": next_cursor})
        return Reply.error(404, "Not found")

    @staticmethod
    def _find(records: list[dict[str, Any]], record_id: str) -> dict[str, Any] | None:
        return next((r for r in records if r.get("id") == record_id), None)

    def _slice(
        self, items: list[dict[str, Any]], cursor: str | None
    ) -> tuple[list[dict[str, Any]] | None, str | None]:
        start = 0
        if cursor:
            if not cursor.startswith("o") or not cursor[1:].isdigit():
                return None, None
            start = int(cursor[1:])
        end = start + self.page_size
        return items[start:end], (f"o{end}" if end < len(items) else None)

    def _page(
        self, request: Request, key: str, items: list[dict[str, Any]], cursor: str | None
    ) -> Reply:
        page, next_cursor = self._slice(items, cursor)
        if page is None:
            return Reply.error(400, "Invalid cursor")
        return self._hooked(request, {key: page, "count": len(page), "cursor": next_cursor})

    def _hooked(self, request: Request, body: dict[str, Any]) -> Reply:
        for hook in self.hooks:
            result = hook(request, body)
            if isinstance(result, Reply):
                return result
            body = result
        return Reply.json(body)


def workspace_snapshot(workspace: Workspace) -> dict[str, dict[str, dict[str, Any]]]:
    """What `api_snapshot` would read from `workspace`, straight from its fixtures (for a
    workspace whose defect would stop a walk): every record with an id, keyed by id, the
    last listing of an id winning."""
    logs = [
        {**entry, "webhook_id": webhook_id}
        for webhook_id, entries in workspace.logs.items()
        for entry in entries
    ]

    def keyed(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {str(r["id"]): r for r in records if isinstance(r, dict) and "id" in r}

    return {
        "projects": keyed(workspace.projects),
        "jobs": keyed([job for jobs in workspace.jobs.values() for job in jobs]),
        "team_members": keyed(workspace.team),
        "job_types": keyed(workspace.job_types),
        "webhooks": keyed(workspace.webhooks),
        "webhook_deliveries": keyed(logs),
    }
