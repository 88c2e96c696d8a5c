"""The Starlette ASGI application: the resources' handlers behind one guard (auth, faults,
stats), the OpenAPI document, and the admin API when asked for.

The handlers themselves are in `simulator/routes/`, one module per resource; this module only
assembles them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from .names import OPENAPI_PATH
from .openapi import build_document
from .routes.admin import AdminRoutes
from .routes.http import JSON, Endpoint, error, json_response
from .routes.job_types import job_type_endpoints
from .routes.jobs import job_endpoints
from .routes.projects import project_endpoints
from .routes.team import team_endpoints
from .routes.webhooks import webhook_endpoints
from .runtime import FULL_ACCESS, Runtime
from .validation import ApiError


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


def guarded(rt: Runtime, e: Endpoint) -> Route:
    """One API operation behind what every request goes through: it is counted, its key and
    scope checked, held while the admin gate is closed, and the configured latency and faults
    applied (faults on reads only)."""
    write = e.method != "GET"
    stat_key = f"{e.method} {e.path}"
    forbidden = f"This API key has read_only scope; {e.method} {e.path} requires full_access"
    stats, faults, handler, gate = rt.stats, rt.faults, e.handler, rt.gate

    async def endpoint(request: Request) -> Response:
        stats[stat_key] = stats.get(stat_key, 0) + 1
        scope = rt.scope_of(request.headers.get("authorization"))
        if scope is None:
            return error(401, "Missing or invalid API key")
        if write and scope != FULL_ACCESS:
            return error(403, forbidden)
        await gate.pass_through()
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

    return Route(e.path, endpoint, methods=[e.method], name=stat_key)


def build_app(rt: Runtime) -> Starlette:
    """Build the ASGI app for one runtime: every resource's routes, in the API's order."""
    store = rt.store
    endpoints = [
        *project_endpoints(store.projects),
        *job_endpoints(store.jobs),
        *job_type_endpoints(store.job_types),
        *team_endpoints(store.team),
        *webhook_endpoints(store.webhooks),
    ]
    routes: list[BaseRoute] = [guarded(rt, e) for e in endpoints]
    examples = store.example_ids()

    async def openapi(_: Request) -> Response:
        return json_response(build_document(examples, store.job_types.ids()))

    routes.append(Route(OPENAPI_PATH, openapi, methods=["GET"]))
    if rt.admin:
        routes.extend(AdminRoutes(rt).routes())
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error(routes)})


def _http_error(routes: list[BaseRoute]) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Starlette's own 404 and 405 answered in the API's error shape; a 405 lists every
    method the path allows (Starlette names only the first matching route's)."""

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error(404, "Not found")
        if exc.status_code == 405:
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

    return http_error
