"""One error hierarchy for the Drone Operations source.

Every message says what failed and what to fix; none of them ever carries the API key.
"""

from __future__ import annotations


class DroneOpsError(Exception):
    """Root of every error this source raises on purpose."""


class ConfigError(DroneOpsError):
    """A setting is missing or invalid; the message names the setting."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
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
    """A transient failure (429, 5xx, transport) outlasted the retry budget."""

    def __init__(self, endpoint: str, attempts: int, last_problem: str) -> None:
        self.endpoint = endpoint
        self.attempts = attempts
        super().__init__(
            f"{endpoint} still failing after {attempts} attempts ({last_problem}); the API may be"
            " down or rate limiting hard: run again later, or raise"
            " sources.drone_ops.retry_budget_seconds"
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
