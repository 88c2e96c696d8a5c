"""HTTP access to the Drone Operations API: retried, throttled GETs over one shared client.

Takes checked values only (`config.py`) and imports nothing above this package. Shared by
every worker thread of a run, so the connection pool, the adaptive limit and the pause after
a 429 are shared too: one throttled worker slows them all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx
import orjson

from .. import settings
from ..exceptions import (
    Interrupted,
    NotFoundError,
    ResponseError,
    RetriesExhaustedError,
    UnreachableError,
    api_message,
    client_error,
    connect_problem,
)
from .auth import BearerAuth
from .host_budget import HostBudget
from .pages import RequestCounter, Uncounted, walk_pages
from .retries import RetryPolicy, TransientError
from .throttle import AdaptiveLimiter, parse_retry_after
from .transport import NoCookies, Urllib3Transport


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
        max_requests_per_second_per_host: float | None = None,
        transport: httpx.BaseTransport | None = None,
        cancel: threading.Event | None = None,
        key_setting: str = settings.KEY_SETTING,
        url_setting: str = settings.URL_SETTING,
    ) -> None:
        self.base_url = base_url
        self.key_setting = key_setting
        """Named by the message of a refused key (a workspace's own setting in a fleet)."""
        self.url_setting = url_setting
        """Named by the message of an unreachable or wrong API (likewise)."""
        self.cancel_event = cancel if cancel is not None else threading.Event()
        """Set to stop: every request loop ends before its next request."""
        self.timeout_seconds = timeout
        self.retry = RetryPolicy(
            max_attempts=max(1, max_attempts),
            budget_seconds=retry_budget_seconds,
            max_retry_after_seconds=max_retry_after_seconds,
            backoff_initial_seconds=backoff_initial_seconds,
            backoff_max_seconds=backoff_max_seconds,
        )
        self.limiter = AdaptiveLimiter(max_workers, max_requests_per_second)
        self.host_budget = (
            HostBudget(base_url, max_requests_per_second_per_host)
            if max_requests_per_second_per_host
            else None
        )
        # a connection for every thread that may hold a limiter slot (job workers, list and
        # chain walks, which may each be one over the limit): a request that acquired its slot
        # never waits for a connection, which could outlast a Retry-After pause begun meanwhile
        pool = 2 * max_workers + 4
        self._http = httpx.Client(
            base_url=self.base_url,
            auth=BearerAuth(api_key),
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            headers={"User-Agent": settings.USER_AGENT, "Accept": "application/json"},
            # urllib3 behind httpx's interface (transport.py): less CPU per request than
            # httpx's own engine, and a pool with no keep-alive timer that never closes a
            # connection a thread holds (encode/httpcore#1110, test_client_pool.py)
            transport=transport or Urllib3Transport(pool, timeout=timeout),
            cookies=NoCookies(),
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
        if self.host_budget is not None:
            self.host_budget.close()
            self.host_budget = None

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
        counters = stats if stats is not None else Uncounted()
        first_failure: TransientError | None
        started = time.monotonic()
        try:
            # the first attempt skips building a retry controller: nearly every call succeeds
            # at once, and at tens of thousands of calls per run that bookkeeping adds up
            return self._get_once(endpoint, path, params, counters, not_found_fix, critical)
        except TransientError as exc:
            first_failure = exc
        retrying = self.retry.retrying(endpoint, started, counters, self._sleep)
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
                raise UnreachableError(self.base_url, str(exc), self.url_setting) from None
            attempts = retrying.statistics.get("attempt_number", 0)
            if exc.short:
                raise ResponseError(
                    endpoint,
                    f"a body that is not valid JSON ({attempts} attempts)",
                    self.url_setting,
                ) from None
            spent = attempts >= self.retry.max_attempts
            limit = "max_attempts" if spent else "retry_budget_seconds"
            raise RetriesExhaustedError(endpoint, attempts, str(exc), limit) from None
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
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Each page body of a cursor-paginated list (`pages.walk_pages`; `stop` ends it); a
        `critical` walk is one nothing else can shorten (see AdaptiveLimiter)."""

        def get_page(page_path: str, query: dict[str, str]) -> dict[str, Any]:
            return self.get_json(
                page_path, query, stats=stats, not_found_fix=not_found_fix, critical=critical
            )

        return walk_pages(
            get_page,
            path,
            params=params,
            stats=stats,
            max_pages=max_pages,
            items_key=items_key,
            stop=stop,
        )

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
            if self.host_budget is not None:
                self.host_budget.wait(self.cancel_event)
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
                    retry_after = min(retry_after, self.retry.max_retry_after_seconds)
                raise TransientError("429 rate limited", retry_after=retry_after)
            if status >= 500 or status == 408:
                raise TransientError(f"{status} {api_message(content)}".strip())
            if status >= 400:
                raise client_error(
                    endpoint, status, content, not_found_fix, self.key_setting, self.url_setting
                )
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
                raise ResponseError(
                    endpoint, f"a JSON {type(body).__name__}, not an object", self.url_setting
                )
            return body
        finally:
            self.limiter.release(throttled=throttled, retry_after=retry_after)

    def _read_within_deadline(self, response: httpx.Response) -> bytes:
        """The body, or a retryable error once the whole response took longer than the timeout
        (httpx's bounds each read: a server dripping its body could hold a worker forever)."""
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
