"""What every handler shares: JSON responses, the error body, reading a JSON request body, the
(path, method, handler) record a resource's handlers are listed as, and the handler of each
kind of operation (read, create, update, act, delete), so a resource lists its operations and
never writes a handler.

Handlers are async and call the store directly (its operations are in-memory and short), which
avoids the thread-pool hop Starlette makes for sync endpoints; bodies are orjson bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from ..validation import ApiError

MAX_BODY_BYTES = 1_048_576
JSON = "application/json"

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Endpoint:
    """One operation of the API: a route template, its method and the handler."""

    path: str
    method: str
    handler: Handler


def json_response(
    body: bytes | Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return Response(data, status_code=status, media_type=JSON, headers=headers)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"message": message}, status, headers)


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


def _arguments(r: Request, path: Sequence[str], query: Sequence[str]) -> list[str | None]:
    """The operation's arguments: path parameters, then query parameters (None when absent)."""
    return [str(r.path_params[p]) for p in path] + [r.query_params.get(q) for q in query]


def reading(
    op: Callable[..., bytes], path: Sequence[str] = (), query: Sequence[str] = ()
) -> Handler:
    """GET: the operation's bytes as they are (a row, or a page)."""

    async def handler(r: Request) -> Response:
        return json_response(op(*_arguments(r, path, query)))

    return handler


def creating(op: Callable[..., str], path: Sequence[str] = ()) -> Handler:
    """POST that creates: 201 with the new row's id."""

    async def handler(r: Request) -> Response:
        body = await read_json(r)
        return json_response({"id": op(*_arguments(r, path, ()), body)}, 201)

    return handler


def said(text: str) -> Callable[[Any], str]:
    """The message of an update whose operation returns nothing to word it by."""
    return lambda _: text


def updating(op: Callable[..., Any], say: Callable[[Any], str], path: Sequence[str]) -> Handler:
    """PATCH (or a POST that changes a row): 200 with a message about what the operation did."""

    async def handler(r: Request) -> Response:
        body = await read_json(r)
        return json_response({"message": say(op(*_arguments(r, path, ()), body))})

    return handler


def acting(op: Callable[..., dict[str, Any]], path: Sequence[str]) -> Handler:
    """POST whose answer is the operation's own report (assignments)."""

    async def handler(r: Request) -> Response:
        body = await read_json(r)
        return json_response(op(*_arguments(r, path, ()), body))

    return handler


def deleting(op: Callable[..., Any], path: Sequence[str]) -> Handler:
    """DELETE: 204."""

    async def handler(r: Request) -> Response:
        op(*_arguments(r, path, ()))
        return Response(status_code=204)

    return handler
