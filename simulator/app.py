"""The Starlette ASGI application: routing, auth, faults, stats and the admin API.

Handlers are async and call the store directly (its operations are in-memory and short), which
avoids the thread-pool hop Starlette makes for sync endpoints; bodies are orjson bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from .events import DeliveryWorker
from .faults import FaultInjector
from .openapi import build_document
from .store import Store
from .validation import ApiError

READ_ONLY = "read_only"
FULL_ACCESS = "full_access"
MAX_BODY_BYTES = 1_048_576
JSON = "application/json"

Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class Runtime:
    """Everything a running simulator shares between requests."""

    store: Store
    read_key: str
    full_key: str
    faults: FaultInjector
    worker: DeliveryWorker
    admin: bool = False
    stats: dict[str, int] = field(default_factory=dict)

    def scope_of(self, header: str | None) -> str | None:
        if not header or header[:7].lower() != "bearer ":
            return None
        key = header[7:].strip()
        if key == self.full_key:
            return FULL_ACCESS
        if key == self.read_key:
            return READ_ONLY
        return None


def json_response(
    body: bytes | Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return Response(data, status_code=status, media_type=JSON, headers=headers)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"message": message}, status, headers)


class TruncatedResponse(Response):
    """A 200 whose JSON body is cut short, with a Content-Length that matches the cut."""

    def __init__(self, full: Response) -> None:
        body = bytes(full.body)
        super().__init__(body[: max(1, len(body) // 2)], status_code=200, media_type=JSON)


class ResetResponse(Response):
    """Announces the full body, sends half of it, then abandons the response.

    Uvicorn closes the connection when an app returns with the response unfinished, which the
    client sees as a reset in the middle of the body.
    """

    def __init__(self, full: Response) -> None:
        super().__init__(bytes(full.body), status_code=200, media_type=JSON)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        half = bytes(self.body)[: max(1, len(self.body) // 2)]
        await send({"type": "http.response.body", "body": half, "more_body": True})


async def read_json(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; an empty body counts as `{}`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, "Request body too large")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, "Request body too large")
    if not raw.strip():
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, "Request body must be valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    return body


def build_app(rt: Runtime) -> Starlette:
    """Build the ASGI app for one runtime."""
    store = rt.store
    stats = rt.stats
    faults = rt.faults

    def api(template: str, method: str, handler: Handler) -> Route:
        write = method != "GET"
        stat_key = f"{method} {template}"
        forbidden = f"This API key has read_only scope; {method} {template} requires full_access"

        async def endpoint(request: Request) -> Response:
            stats[stat_key] = stats.get(stat_key, 0) + 1
            scope = rt.scope_of(request.headers.get("authorization"))
            if scope is None:
                return error(401, "Missing or invalid API key")
            if write and scope != FULL_ACCESS:
                return error(403, forbidden)
            delay = faults.delay()
            if delay:
                await asyncio.sleep(delay)
            fault = None if write else faults.draw()
            if fault == "429":
                return error(429, "Too many requests", {"Retry-After": "1"})
            if fault in ("500", "502", "503"):
                return error(int(fault), "Simulated server error")
            try:
                response = await handler(request)
            except ApiError as exc:
                return error(exc.status, exc.message, exc.headers)
            if fault == "truncate" and response.status_code == 200:
                return TruncatedResponse(response)
            if fault == "reset" and response.status_code == 200:
                return ResetResponse(response)
            return response

        return Route(template, endpoint, methods=[method], name=stat_key)

    def q(request: Request, name: str) -> str | None:
        return request.query_params.get(name)

    def p(request: Request, name: str) -> str:
        return str(request.path_params[name])

    # -- projects ----------------------------------------------------------------------------
    async def list_projects(r: Request) -> Response:
        qp = r.query_params
        return json_response(
            store.list_projects(qp.get("cursor"), qp.get("status"), qp.get("archived"))
        )

    async def create_project(r: Request) -> Response:
        return json_response({"id": store.create_project(await read_json(r))}, 201)

    async def get_project(r: Request) -> Response:
        return json_response(store.get_project(p(r, "projectId")))

    async def patch_project(r: Request) -> Response:
        body = await read_json(r)
        store.patch_project(p(r, "projectId"), body)
        return json_response({"message": "Project updated successfully"})

    async def archive_project(r: Request) -> Response:
        body = await read_json(r)
        archived = store.archive_project(p(r, "projectId"), body)
        word = "archived" if archived else "restored"
        return json_response({"message": f"Project {word} successfully"})

    async def delete_project(r: Request) -> Response:
        store.delete_project(p(r, "projectId"))
        return Response(status_code=204)

    # -- jobs --------------------------------------------------------------------------------
    async def list_jobs(r: Request) -> Response:
        return json_response(store.list_jobs(p(r, "projectId"), q(r, "cursor")))

    async def create_job(r: Request) -> Response:
        body = await read_json(r)
        return json_response({"id": store.create_job(p(r, "projectId"), body)}, 201)

    async def get_job(r: Request) -> Response:
        return json_response(store.get_job(p(r, "projectId"), p(r, "jobId")))

    async def patch_job(r: Request) -> Response:
        body = await read_json(r)
        store.patch_job(p(r, "projectId"), p(r, "jobId"), body)
        return json_response({"message": "Job updated successfully"})

    async def delete_job(r: Request) -> Response:
        store.delete_job(p(r, "projectId"), p(r, "jobId"))
        return Response(status_code=204)

    async def assign(r: Request) -> Response:
        body = await read_json(r)
        return json_response(store.assign(p(r, "projectId"), p(r, "jobId"), body))

    async def unassign(r: Request) -> Response:
        body = await read_json(r)
        return json_response(store.unassign(p(r, "projectId"), p(r, "jobId"), body))

    # -- job types, team, webhooks -----------------------------------------------------------
    async def list_job_types(r: Request) -> Response:
        return json_response(store.list_job_types(q(r, "cursor")))

    async def create_job_type(r: Request) -> Response:
        return json_response({"id": store.create_job_type(await read_json(r))}, 201)

    async def get_job_type(r: Request) -> Response:
        return json_response(store.get_job_type(p(r, "jobTypeId")))

    async def list_team(r: Request) -> Response:
        return json_response(store.list_team(q(r, "cursor"), q(r, "role")))

    async def get_member(r: Request) -> Response:
        return json_response(store.get_member(p(r, "teamMemberId")))

    async def list_webhooks(r: Request) -> Response:
        return json_response(store.list_webhooks(q(r, "cursor")))

    async def create_webhook(r: Request) -> Response:
        return json_response({"id": store.create_webhook(await read_json(r))}, 201)

    async def get_webhook(r: Request) -> Response:
        return json_response(store.get_webhook(p(r, "webhookId"), q(r, "cursor")))

    async def patch_webhook(r: Request) -> Response:
        body = await read_json(r)
        store.patch_webhook(p(r, "webhookId"), body)
        return json_response({"message": "Webhook updated successfully"})

    async def delete_webhook(r: Request) -> Response:
        store.delete_webhook(p(r, "webhookId"))
        return Response(status_code=204)

    P = "/v1/projects/{projectId}"
    J = P + "/jobs/{jobId}"
    routes: list[BaseRoute] = [
        api("/v1/projects", "GET", list_projects),
        api("/v1/projects", "POST", create_project),
        api(P, "GET", get_project),
        api(P, "PATCH", patch_project),
        api(P, "DELETE", delete_project),
        api(P + "/archive", "POST", archive_project),
        api(P + "/jobs", "GET", list_jobs),
        api(P + "/jobs", "POST", create_job),
        api(J, "GET", get_job),
        api(J, "PATCH", patch_job),
        api(J, "DELETE", delete_job),
        api(J + "/assign", "POST", assign),
        api(J + "/unassign", "POST", unassign),
        api("/v1/job-types", "GET", list_job_types),
        api("/v1/job-types", "POST", create_job_type),
        api("/v1/job-types/{jobTypeId}", "GET", get_job_type),
        api("/v1/team", "GET", list_team),
        api("/v1/team/{teamMemberId}", "GET", get_member),
        api("/v1/webhooks", "GET", list_webhooks),
        api("/v1/webhooks", "POST", create_webhook),
        api("/v1/webhooks/{webhookId}", "GET", get_webhook),
        api("/v1/webhooks/{webhookId}", "PATCH", patch_webhook),
        api("/v1/webhooks/{webhookId}", "DELETE", delete_webhook),
    ]
    examples = store.example_ids()

    async def openapi(_: Request) -> Response:
        return json_response(build_document(examples, store.job_type_ids()))

    routes.append(Route("/openapi.json", openapi, methods=["GET"]))
    if rt.admin:
        routes.extend(admin_routes(rt))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error(404, "Not found")
        if exc.status_code == 405:
            # Starlette names only the first matching route's methods; list every route's
            allowed = sorted(
                {
                    m
                    for route in routes
                    if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE
                    for m in route.methods or ()
                }
            )
            return error(405, "Method not allowed", {"Allow": ", ".join(allowed)})
        return error(exc.status_code, str(exc.detail))

    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})


def admin_routes(rt: Runtime) -> list[BaseRoute]:
    """Test and benchmark controls outside /v1; mounted only with --admin."""

    def admin(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if rt.scope_of(request.headers.get("authorization")) != FULL_ACCESS:
                return error(401, "Admin API needs the full_access key")
            try:
                return await handler(request)
            except ApiError as exc:
                return error(exc.status, exc.message)
            except ValueError as exc:
                return error(400, str(exc))

        return endpoint

    async def set_faults(r: Request) -> Response:
        body = await read_json(r)
        spec = body.get("faults")
        if spec is not None and not isinstance(spec, str):
            raise ApiError(400, "faults must be a string or null")
        rt.faults.set(spec)
        return json_response({"faults": rt.faults.spec})

    async def wait_deliveries(r: Request) -> Response:
        body = await read_json(r)
        timeout = float(body.get("timeout", 10))
        deadline = time.monotonic() + timeout
        while rt.worker.pending and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return json_response({"pending": rt.worker.pending})

    async def get_stats(_: Request) -> Response:
        requests = dict(sorted(rt.stats.items()))
        return json_response({"requests": requests, "total": sum(requests.values())})

    async def reset_stats(_: Request) -> Response:
        rt.stats.clear()
        return json_response({"requests": {}, "total": 0})

    async def churn(r: Request) -> Response:
        body = await read_json(r)
        seed = body.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ApiError(400, "seed must be an integer")
        result = rt.store.churn(
            seed=seed,
            update_fraction=float(body.get("update_fraction", 0.01)),
            delete_fraction=float(body.get("delete_fraction", 0.001)),
            new_deliveries_per_webhook=int(body.get("new_deliveries_per_webhook", 0)),
        )
        return json_response(result)

    async def counts(_: Request) -> Response:
        return json_response(rt.store.counts())

    return [
        Route("/_admin/faults", admin(set_faults), methods=["PUT"]),
        Route("/_admin/deliveries/wait", admin(wait_deliveries), methods=["POST"]),
        Route("/_admin/stats", admin(get_stats), methods=["GET"]),
        Route("/_admin/stats/reset", admin(reset_stats), methods=["POST"]),
        Route("/_admin/churn", admin(churn), methods=["POST"]),
        Route("/_admin/counts", admin(counts), methods=["GET"]),
    ]
