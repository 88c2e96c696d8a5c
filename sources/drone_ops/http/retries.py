"""What is worth retrying, how long to wait, and when to give up (tenacity's policy pieces).

A request's first attempt runs without any of this (nearly every call succeeds at once); the
client enters the policy only after a `TransientError`, replaying that first failure so the
policy counts and waits on it.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
    stop_before_delay,
)

from .. import settings
from .pages import RequestCounter

log = logging.getLogger(__name__)


class TransientError(Exception):
    """A failure worth retrying: 429, 5xx, a transport error or a cut-off body.

    `short` marks failures that are retried only briefly (`SHORT_RETRY_ATTEMPTS` within
    `SHORT_RETRY_SECONDS`): a host that refuses connections or a body that is not JSON is
    rarely fixed by waiting, but a server restart or one cut-off body is."""

    def __init__(
        self,
        problem: str,
        retry_after: float | None = None,
        *,
        short: bool = False,
        unreachable: bool = False,
    ) -> None:
        super().__init__(problem)
        self.retry_after = retry_after
        self.short = short or unreachable
        self.unreachable = unreachable


@dataclass(frozen=True)
class RetryPolicy:
    """Checked limits of the retry loop (from `SourceConfig`)."""

    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS
    budget_seconds: float = settings.DEFAULT_RETRY_BUDGET_SECONDS
    max_retry_after_seconds: float = settings.DEFAULT_MAX_RETRY_AFTER_SECONDS
    backoff_initial_seconds: float = settings.DEFAULT_BACKOFF_INITIAL_SECONDS
    backoff_max_seconds: float = settings.DEFAULT_BACKOFF_MAX_SECONDS

    def retrying(
        self, endpoint: str, started: float, counters: RequestCounter, sleep: Any
    ) -> Retrying:
        """The tenacity controller for one request whose first attempt failed at `started`."""
        return Retrying(
            retry=retry_if_exception_type(TransientError),
            # stops before a wait that would end past the budget, rather than overrun it
            stop=stop_any(
                stop_after_attempt(max(1, self.max_attempts)),
                stop_before_delay(self.budget_seconds - (time.monotonic() - started)),
                _stop_short_retries(started),
            ),
            wait=self.wait,
            sleep=sleep,
            before_sleep=lambda state: _before_sleep(endpoint, counters, state),
            reraise=True,
        )

    def wait(self, state: RetryCallState) -> float:
        """The server's Retry-After when it gave one, else jittered exponential backoff."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return exc.retry_after
        exponential = self.backoff_initial_seconds * 2 ** (state.attempt_number - 1)
        capped = min(self.backoff_max_seconds, exponential)
        return capped / 2 + random.uniform(0, capped / 2)


def _before_sleep(endpoint: str, stats: RequestCounter, state: RetryCallState) -> None:
    stats.add(retries=1)
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    # an unreachable host fails the run within seconds with one message of its own
    level = logging.INFO if isinstance(exc, TransientError) and exc.short else logging.WARNING
    log.log(level, "%s failed (%s); retry %d in %.2fs", endpoint, exc, state.attempt_number, wait)


def _stop_short_retries(started: float) -> Any:
    """Stops the retries of a `short` failure after a few quick attempts."""

    def stop(state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if not isinstance(exc, TransientError) or not exc.short:
            return False
        elapsed = time.monotonic() - started
        return (
            state.attempt_number >= settings.SHORT_RETRY_ATTEMPTS
            or elapsed + (state.upcoming_sleep or 0.0) > settings.SHORT_RETRY_SECONDS
        )

    return stop
