"""One error hierarchy for the Drone Operations source.

Every message says what failed and what to fix; none of them ever carries the API key.

    DroneOpsError
    ├── ConfigError            a setting is missing or invalid (names it)
    ├── ApiError               a 4xx retrying cannot fix (names the endpoint and the fix)
    │   ├── AuthError          401 / 403
    │   └── NotFoundError      404
    ├── RetriesExhaustedError  429 / 5xx / transport errors outlasted the attempts or the budget
    ├── UnreachableError       connection refused, unknown host, TLS failure
    ├── ResponseError          a 200 whose body is not a JSON object
    ├── PaginationError        cursors or pages that do not make progress
    ├── MassDeleteRefused      the mass-delete guard refused a table
    └── Interrupted            SIGINT / SIGTERM stopped the run
"""

from __future__ import annotations

import httpx
import orjson

from . import settings


class DroneOpsError(Exception):
    """Root of every error this source raises on purpose."""


class ConfigError(DroneOpsError):
    """A setting is missing or invalid; the message names the setting."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"{setting}: {problem}")


class ApiError(DroneOpsError):
    """The API answered with an error that retrying will not fix."""

    def __init__(self, endpoint: str, status: int, api_message: str, fix: str) -> None:
        self.endpoint = endpoint
        self.status = status
        self.api_message = api_message
        self.fix = fix
        detail = f" ({api_message})" if api_message else ""
        super().__init__(f"{endpoint} returned {status}{detail}: {fix}")


class AuthError(ApiError):
    """401 or 403: the key is wrong or lacks the scope."""


class NotFoundError(ApiError):
    """404 for something the sync expected to exist."""


class RetriesExhaustedError(DroneOpsError):
    """A transient failure (429, 5xx, transport) outlasted the retries.

    `setting` is the limit that ended them, `max_attempts` or `retry_budget_seconds`: the
    message names only that one, since raising the other would change nothing."""

    def __init__(self, endpoint: str, attempts: int, last_problem: str, setting: str) -> None:
        self.endpoint = endpoint
        self.attempts = attempts
        self.setting = setting
        super().__init__(
            f"{endpoint} still failing after {attempts} attempts ({last_problem}); the API may be"
            f" down or rate limiting hard: run again later, or raise"
            f" {settings.CONFIG_SECTION}.{setting}"
        )


class PaginationError(DroneOpsError):
    """The API's cursors do not make progress (a repeated cursor or too many pages)."""


class MassDeleteRefused(DroneOpsError):
    """A run would retire more of a table than the configured share allows."""

    def __init__(self, table: str, retiring: int, current: int, max_share: float) -> None:
        self.table = table
        self.retiring = retiring
        self.current = current
        super().__init__(
            f"refusing to retire {retiring} of {current} current rows of {table}"
            f" ({retiring / current:.0%} > {max_share:.0%}); nothing was loaded for {table}."
            " If the deletions are real, run again with --allow-mass-delete"
            " (or raise sources.drone_ops.max_retire_share)"
        )


class UnreachableError(DroneOpsError):
    """The API's host could not be reached at all (refused, unknown host, TLS failure): a
    retry budget meant for a busy server would only delay the message."""

    def __init__(self, base_url: str, cause: str, url_setting: str = settings.URL_SETTING) -> None:
        self.base_url = base_url
        super().__init__(
            f"cannot reach the API at {base_url} ({cause}): check"
            f" {url_setting} and that the API is up and reachable from here"
        )


class ResponseError(DroneOpsError):
    """A 200 whose body is not what the API specifies (not JSON, not an object)."""

    def __init__(
        self, endpoint: str, problem: str, url_setting: str = settings.URL_SETTING
    ) -> None:
        self.endpoint = endpoint
        super().__init__(
            f"{endpoint} returned 200 with {problem}: check that {url_setting}"
            " points at the Drone Operations API (not a proxy or login page)"
        )


class Interrupted(DroneOpsError):
    """The run was asked to stop (SIGINT or SIGTERM) before this part of it finished."""

    def __init__(self, what: str = "the run") -> None:
        super().__init__(f"{what} was interrupted before it finished; nothing of it was loaded")


# What a failed response means, in words a person can act on.


def connect_problem(exc: httpx.TransportError) -> str:
    """What kept the connection from being made, in words a person can act on."""
    text = str(exc)
    lowered = text.lower()
    if "certificate" in lowered or "ssl" in lowered or "tls" in lowered:
        return f"TLS failure: {text}"
    if "name or service not known" in lowered or "nodename nor servname" in lowered:
        return "unknown host name"
    if "temporary failure in name resolution" in lowered:
        return "host name could not be resolved"
    if "refused" in lowered:
        return "connection refused"
    if isinstance(exc, httpx.ConnectTimeout):
        return "connection timed out"
    return f"{type(exc).__name__}: {text}"


def api_message(content: bytes) -> str:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:300] if message else ""


def client_error(
    endpoint: str,
    status: int,
    content: bytes,
    not_found_fix: str | None,
    key_setting: str = settings.KEY_SETTING,
    url_setting: str = settings.URL_SETTING,
) -> ApiError:
    message = api_message(content)
    if status == 401:
        return AuthError(endpoint, status, message, f"the API key was refused: check {key_setting}")
    if status == 403:
        return AuthError(
            endpoint,
            status,
            message,
            f"the API key lacks the scope for this request: use a key with read access in"
            f" {key_setting}",
        )
    if status == 404:
        fix = not_found_fix or (f"the path does not exist on this API: check {url_setting}")
        return NotFoundError(endpoint, status, message, fix)
    return ApiError(
        endpoint,
        status,
        message,
        "the API rejected the request; check the sources.drone_ops settings that shape it"
        " (a stale cursor goes away on the next run)",
    )
