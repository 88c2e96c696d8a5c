"""HTTP access to the Drone Operations API: one client, one paginator, one retry policy.

The client is shared by every worker thread of a run, so the connection pool, the adaptive
concurrency limit and the pause after a 429 are shared too: one throttled worker slows them all.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Protocol

import httpx
import orjson
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
    stop_before_delay,
)

from . import settings
from .config import checked_api_key, validate_base_url
from .exceptions import (
    DroneOpsError,
    Interrupted,
    NotFoundError,
    PaginationError,
    ResponseError,
    RetriesExhaustedError,
    UnreachableError,
    api_message,
    client_error,
    connect_problem,
)
from .throttle import AdaptiveLimiter, parse_retry_after

log = logging.getLogger(__name__)


class RequestCounter(Protocol):
    """Counts requests, retries and pages for whoever asked (the walk counts per table)."""

    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None: ...


class _Uncounted:
    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None:
        return None


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


class _BearerAuth(httpx.Auth):
    """Adds the key to each request; its repr never shows it."""

    def __init__(self, api_key: str) -> None:
        self._header = f"Bearer {api_key}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request

    def __repr__(self) -> str:
        return "_BearerAuth(<redacted>)"


class DroneOpsClient:
    """Thread-safe client: retried, throttled GETs and a cursor paginator."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        max_workers: int = settings.DEFAULT_MAX_WORKERS,
        timeout: float = settings.DEFAULT_TIMEOUT_SECONDS,
        max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS,
        retry_budget_seconds: float = settings.DEFAULT_RETRY_BUDGET_SECONDS,
        max_retry_after_seconds: float = settings.DEFAULT_MAX_RETRY_AFTER_SECONDS,
        backoff_initial_seconds: float = settings.DEFAULT_BACKOFF_INITIAL_SECONDS,
        backoff_max_seconds: float = settings.DEFAULT_BACKOFF_MAX_SECONDS,
        max_requests_per_second: float | None = None,
        transport: httpx.BaseTransport | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        api_key = checked_api_key(api_key)
        self.base_url = validate_base_url(base_url)
        self.cancel_event = cancel if cancel is not None else threading.Event()
        """Set to stop: every request loop ends before its next request."""
        self.max_attempts = max(1, max_attempts)
        self.timeout_seconds = timeout
        self.retry_budget_seconds = retry_budget_seconds
        self.max_retry_after_seconds = max_retry_after_seconds
        self.backoff_initial_seconds = backoff_initial_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.limiter = AdaptiveLimiter(max_workers, max_requests_per_second)
        # a connection for every thread that may hold a limiter slot (job workers, list and
        # chain walks, which may each be one over the limit): a request that acquired its slot
        # never waits in httpx's pool, where it would outlast a Retry-After pause begun meanwhile
        pool = 2 * max_workers + 4
        self._http = httpx.Client(
            base_url=self.base_url,
            auth=_BearerAuth(api_key),
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            headers={"User-Agent": settings.USER_AGENT, "Accept": "application/json"},
            transport=transport,
            follow_redirects=False,
            # the configured API and nothing else: no proxy or netrc from the environment
            trust_env=False,
        )

    def __enter__(self) -> DroneOpsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def cancel(self) -> None:
        """Stops every walk using this client: queued requests are not sent, retry waits end,
        and the connection pool is closed so requests in flight fail at once."""
        self.cancel_event.set()
        self._http.close()

    def probe_status(self, method: str, path: str, body: Any) -> tuple[int, str]:
        """One unretried request, for `check`: its status and the API's message."""
        response = self._http.request(method, path, json=body)
        return response.status_code, api_message(response.content)

    def get_json(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        stats: RequestCounter | None = None,
        not_found_fix: str | None = None,
        critical: bool = False,
    ) -> dict[str, Any]:
        """GETs `path` and returns its JSON object, retrying what is worth retrying."""
        endpoint = f"GET {path}"
        counters = stats if stats is not None else _Uncounted()
        first_failure: TransientError | None
        started = time.monotonic()
        try:
            # the first attempt skips building a retry controller: nearly every call succeeds
            # at once, and at tens of thousands of calls per run that bookkeeping adds up
            return self._get_once(endpoint, path, params, counters, not_found_fix, critical)
        except TransientError as exc:
            first_failure = exc
        retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            # stops before a wait that would end past the budget, rather than overrun it
            stop=stop_any(
                stop_after_attempt(self.max_attempts),
                stop_before_delay(self.retry_budget_seconds - (time.monotonic() - started)),
                _stop_short_retries(started),
            ),
            wait=self._wait,
            sleep=self._sleep,
            before_sleep=lambda state: self._before_sleep(endpoint, counters, state),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    if first_failure is not None:
                        # the failed first attempt, replayed so the policy counts and waits on it
                        failure, first_failure = first_failure, None
                        raise failure
                    return self._get_once(endpoint, path, params, counters, not_found_fix, critical)
        except TransientError as exc:
            if self.cancel_event.is_set():
                raise Interrupted(endpoint) from None
            if exc.unreachable:
                raise UnreachableError(self.base_url, str(exc)) from None
            if exc.short:
                attempts = retrying.statistics.get("attempt_number", 0)
                raise ResponseError(
                    endpoint, f"a body that is not valid JSON ({attempts} attempts)"
                ) from None
            raise RetriesExhaustedError(
                endpoint, retrying.statistics.get("attempt_number", 0), str(exc)
            ) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def get_record(self, path: str, stats: RequestCounter) -> dict[str, Any] | None:
        """A single record, or None when the API says it does not exist (404)."""
        try:
            return self.get_json(path, stats=stats)
        except NotFoundError:
            return None

    def _sleep(self, seconds: float) -> None:
        """A retry wait that ends early, with `Interrupted`, when the run is stopped."""
        if self.cancel_event.wait(seconds):
            raise Interrupted("a retry wait")

    def paginate(
        self,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        stats: RequestCounter | None = None,
        not_found_fix: str | None = None,
        max_pages: int = settings.MAX_PAGES_PER_WALK,
        critical: bool = False,
        items_key: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Yields each page body of a cursor-paginated list until the cursor is null;
        `critical` marks a long walk that nothing else can shorten (see AdaptiveLimiter).

        Two guards end a walk that would not: a cursor seen before, and (given `items_key`) a
        page whose every item id this walk has already seen, which is what a server that
        hands out fresh cursors over the same rows looks like."""
        cursor: str | None = None
        seen: set[str] = set()
        seen_ids: set[str] = set()
        for _ in range(max_pages):
            query = dict(params or {})
            if cursor is not None:
                query["cursor"] = cursor
            page = self.get_json(
                path, query, stats=stats, not_found_fix=not_found_fix, critical=critical
            )
            if stats is not None:
                stats.add(pages=1)
            next_cursor = page.get("cursor")
            if items_key is not None and next_cursor is not None:
                _check_page_advances(path, page, items_key, seen_ids)
            yield page
            if next_cursor is None:
                return
            if not isinstance(next_cursor, str) or next_cursor in seen:
                raise PaginationError(
                    f"GET {path} returned a cursor that does not advance ({next_cursor!r});"
                    " the walk was stopped to avoid a loop"
                )
            seen.add(next_cursor)
            cursor = next_cursor
        raise PaginationError(f"GET {path} returned more than {max_pages} pages; stopped")

    def _get_once(
        self,
        endpoint: str,
        path: str,
        params: Mapping[str, str] | None,
        stats: RequestCounter,
        not_found_fix: str | None,
        critical: bool,
    ) -> dict[str, Any]:
        self.limiter.acquire(critical=critical, cancel=self.cancel_event)
        throttled = False
        retry_after: float | None = None
        try:
            stats.add(requests=1)
            try:
                with self._http.stream("GET", path, params=params) as response:
                    content = self._read_within_deadline(response)
            except (httpx.TransportError, RuntimeError) as exc:
                # a request cut off by `cancel()` (httpx refuses a closed client with a
                # RuntimeError) is the stop, not a failure to retry
                if self.cancel_event.is_set():
                    raise Interrupted(endpoint) from None
                if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    raise TransientError(connect_problem(exc), unreachable=True) from None
                if isinstance(exc, httpx.TransportError):
                    raise TransientError(f"{type(exc).__name__}: {exc}") from None
                raise
            status = response.status_code
            if status == 429:
                throttled = True
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    retry_after = min(retry_after, self.max_retry_after_seconds)
                raise TransientError("429 rate limited", retry_after=retry_after)
            if status >= 500 or status == 408:
                raise TransientError(f"{status} {api_message(content)}".strip())
            if status >= 400:
                raise client_error(endpoint, status, content, not_found_fix)
            if status != 200:
                raise TransientError(f"unexpected status {status}")
            try:
                body = orjson.loads(content)
            except orjson.JSONDecodeError:
                # a JSON body cut off heals on a retry; a page that is not JSON at all (a login
                # page, a proxy's error) does not, so it is retried only briefly
                if content.lstrip()[:1] in (b"{", b"["):
                    raise TransientError("truncated JSON body") from None
                raise TransientError("a body that is not JSON", short=True) from None
            if not isinstance(body, dict):
                raise ResponseError(endpoint, f"a JSON {type(body).__name__}, not an object")
            return body
        finally:
            self.limiter.release(throttled=throttled, retry_after=retry_after)

    def _read_within_deadline(self, response: httpx.Response) -> bytes:
        """The body, or a retryable error once the whole response took longer than the
        timeout: httpx's timeout bounds each read, so a server dripping its body slowly would
        otherwise hold a worker as long as it likes."""
        deadline = time.monotonic() + self.timeout_seconds
        chunks: list[bytes] = []
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TransientError(
                    f"the response took longer than {self.timeout_seconds:g}s"
                    f" ({settings.CONFIG_SECTION}.timeout_seconds)"
                )
        return b"".join(chunks)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return exc.retry_after
        exponential = self.backoff_initial_seconds * 2 ** (state.attempt_number - 1)
        capped = min(self.backoff_max_seconds, exponential)
        return capped / 2 + random.uniform(0, capped / 2)

    @staticmethod
    def _before_sleep(endpoint: str, stats: RequestCounter, state: RetryCallState) -> None:
        stats.add(retries=1)
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        # an unreachable host fails the run within seconds with one message of its own
        level = logging.INFO if isinstance(exc, TransientError) and exc.short else logging.WARNING
        log.log(
            level, "%s failed (%s); retry %d in %.2fs", endpoint, exc, state.attempt_number, wait
        )


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


def _check_page_advances(
    path: str, page: dict[str, Any], items_key: str, seen_ids: set[str]
) -> None:
    """Raises when a page that promises more pages repeats only rows seen before."""
    items = page.get(items_key)
    if not isinstance(items, list) or not items:
        return
    ids = {str(item.get("id")) for item in items if isinstance(item, dict)}
    if ids and ids <= seen_ids:
        raise PaginationError(
            f"GET {path} returned a page whose {len(ids)} {items_key} were all on earlier pages"
            " of this walk, with a new cursor; the walk was stopped to avoid a loop"
        )
    seen_ids.update(ids)


def page_items(page: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    """The page's record list, each record with an id: anything else is a broken page."""
    items = page.get(key)
    if not isinstance(items, list):
        raise DroneOpsError(f"GET {path} returned a page without a {key!r} list")
    for item in items:
        if not isinstance(item, dict) or item.get("id") is None:
            raise DroneOpsError(f"GET {path} returned a {key} entry without an id")
    return items
