"""What every handler shares: JSON responses, the error body, reading a JSON request body, and
the (path, method, handler) record a resource's handlers are listed as.

Handlers are async and call the store directly (its operations are in-memory and short), which
avoids the thread-pool hop Starlette makes for sync endpoints; bodies are orjson bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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


def created(new_id: str) -> Response:
    """201 with the new row's id, what every create answers."""
    return json_response({"id": new_id}, 201)


def message(text: str) -> Response:
    """200 with a message, what updates answer."""
    return json_response({"message": text})


def no_content() -> Response:
    """204, what deletes answer."""
    return Response(status_code=204)


def path_param(request: Request, name: str) -> str:
    return str(request.path_params[name])


def query_param(request: Request, name: str) -> str | None:
    return request.query_params.get(name)


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
