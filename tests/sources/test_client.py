"""Unit tests of the HTTP client: retries, errors, the secret, pagination, base URL, limiter."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime, formatdate
from typing import Any

import httpx
import pytest

from drone_ops_sync.sources.drone_ops import read_source_config
from drone_ops_sync.sources.drone_ops.config import checked_api_key, validate_base_url
from drone_ops_sync.sources.drone_ops.exceptions import (
    ApiError,
    AuthError,
    ConfigError,
    Interrupted,
    NotFoundError,
    PaginationError,
    ResponseError,
    RetriesExhaustedError,
    UnreachableError,
)
from drone_ops_sync.sources.drone_ops.http.client import DroneOpsClient
from drone_ops_sync.sources.drone_ops.http.throttle import AdaptiveLimiter, parse_retry_after
from drone_ops_sync.sources.drone_ops.internal import settings
from drone_ops_sync.sources.drone_ops.walk import WalkStats

CANARY = "canary-SECRET-5f1e"
BASE = "https://api.example.com"
PATH = "/v1/projects"
Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Script:
    """A MockTransport handler that gives scripted answers, then 200 `{"ok": true}`."""

    def __init__(self, *answers: Answer, then: Answer | None = None) -> None:
        self.answers: deque[Answer] = deque(answers)
        self.then = then
        self.requests: list[httpx.Request] = []
        self.times: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.times.append(time.monotonic())
        answer = self.answers.popleft() if self.answers else self.then
        if answer is None:
            return httpx.Response(200, json={"ok": True})
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return httpx.Response(
                answer.status_code, headers=answer.headers, content=answer.content
            )
        return answer(request)


def make_client(handler: Script, **overrides: Any) -> DroneOpsClient:
    options: dict[str, Any] = {
        "max_workers": 4,
        "max_attempts": 5,
        "retry_budget_seconds": 10.0,
        "max_retry_after_seconds": 1.0,
        "backoff_initial_seconds": 0.001,
        "backoff_max_seconds": 0.002,
    }
    options.update(overrides)
    return DroneOpsClient(BASE, CANARY, transport=httpx.MockTransport(handler), **options)


def status(code: int, message: str = "", **headers: str) -> httpx.Response:
    body = {"message": message} if message else {}
    return httpx.Response(code, json=body, headers=headers)


# --- 429 and Retry-After ----------------------------------------------------------------------


def test_429_retry_after_seconds_is_honoured() -> None:
    """A 429 waits the Retry-After seconds before the retry, then succeeds."""
    script = Script(status(429, "slow down", **{"Retry-After": "0.3"}))
    stats = WalkStats()
    with make_client(script) as client:
        assert client.get_json(PATH, stats=stats) == {"ok": True}
    assert len(script.requests) == 2
    assert script.times[1] - script.times[0] >= 0.3
    assert (stats.requests, stats.retries) == (2, 1)


def test_429_retry_after_is_capped() -> None:
    """A huge Retry-After is capped at max_retry_after_seconds."""
    script = Script(status(429, **{"Retry-After": "3600"}))
    with make_client(script, max_retry_after_seconds=0.2) as client:
        started = time.monotonic()
        assert client.get_json(PATH) == {"ok": True}
        elapsed = time.monotonic() - started
    assert script.times[1] - script.times[0] >= 0.2
    assert elapsed < 2.0


def test_429_retry_after_http_date_is_honoured_and_capped() -> None:
    """Retry-After as an HTTP date (1 to 2 s ahead) is honoured, capped at the maximum."""
    script = Script(status(429, **{"Retry-After": formatdate(time.time() + 2, usegmt=True)}))
    with make_client(script, max_retry_after_seconds=0.25) as client:
        assert client.get_json(PATH) == {"ok": True}
    gap = script.times[1] - script.times[0]
    assert 0.25 <= gap < 1.0


def test_429_throttles_the_shared_limiter() -> None:
    """A 429 halves the client's concurrency limit (it is shared by every worker)."""
    script = Script(status(429, **{"Retry-After": "0"}))
    with make_client(script, max_workers=8) as client:
        client.get_json(PATH)
        assert client.limiter.limit == 4


def test_parse_retry_after_http_date_with_fixed_now() -> None:
    """An HTTP date is converted to seconds from `now`; a past date means no wait."""
    when = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    header = format_datetime(when, usegmt=True)
    assert header == "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after(header, now=when.timestamp() - 90) == pytest.approx(90.0)
    assert parse_retry_after(header, now=when.timestamp() + 5) == 0.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5", 5.0), (" 2.5 ", 2.5), ("0", 0.0), ("-3", 0.0), ("", None), (None, None), ("soon", None)],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    """Seconds parse as floats (never negative); empty or garbage means no header."""
    assert parse_retry_after(value, now=0.0) == expected


# --- transient failures are retried -----------------------------------------------------------


@pytest.mark.parametrize("code", [500, 502, 503, 408])
def test_transient_status_is_retried_then_succeeds(code: int) -> None:
    """5xx and 408 are retried with backoff until the API answers."""
    script = Script(status(code, "oops"), status(code, "oops"))
    stats = WalkStats()
    with make_client(script) as client:
        assert client.get_json(PATH, stats=stats) == {"ok": True}
    assert len(script.requests) == 3
    assert (stats.requests, stats.retries) == (3, 2)


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("peer closed connection"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_transport_errors_are_retried(error: Exception) -> None:
    """Connection errors, timeouts and protocol errors are retried."""
    script = Script(error)
    with make_client(script) as client:
        assert client.get_json(PATH) == {"ok": True}
    assert len(script.requests) == 2


@pytest.mark.parametrize("body", [b'{"projects": [{"id": "p1"', b"<html>gateway</html>"], ids=str)
def test_invalid_or_truncated_json_body_is_retried(body: bytes) -> None:
    """A 200 whose body is cut off or not JSON is retried (a cut-off body heals)."""
    script = Script(httpx.Response(200, content=body))
    with make_client(script) as client:
        assert client.get_json(PATH) == {"ok": True}
    assert len(script.requests) == 2


def test_a_body_that_stays_invalid_json_fails_after_a_few_quick_attempts() -> None:
    """A non-JSON 200 that does not heal (a login page, a proxy) is not retried for the whole
    budget: a few attempts, then one error naming the endpoint and what to check."""
    script = Script(then=httpx.Response(200, content=b"<html>login</html>"))
    with make_client(script, max_attempts=8) as client, pytest.raises(ResponseError) as info:
        client.get_json(PATH)
    assert len(script.requests) == settings.SHORT_RETRY_ATTEMPTS
    assert f"GET {PATH}" in str(info.value) and "base_url" in str(info.value)


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"42"], ids=str)
def test_a_json_body_that_is_not_an_object_fails_at_once(body: bytes) -> None:
    """A well-formed JSON body of the wrong shape will not change on a retry."""
    script = Script(httpx.Response(200, content=body))
    with make_client(script) as client, pytest.raises(ResponseError) as info:
        client.get_json(PATH)
    assert len(script.requests) == 1
    assert "not an object" in str(info.value)


def test_exhausted_attempts_raise_naming_endpoint_and_attempts() -> None:
    """After max_attempts transient failures: RetriesExhaustedError with endpoint, attempts,
    the last problem and what to do."""
    script = Script(then=status(503, "maintenance"))
    with (
        make_client(script, max_attempts=3) as client,
        pytest.raises(RetriesExhaustedError) as info,
    ):
        client.get_json(PATH)
    assert len(script.requests) == 3
    assert info.value.endpoint == f"GET {PATH}"
    assert info.value.attempts == 3
    text = str(info.value)
    assert f"GET {PATH}" in text
    assert "3 attempts" in text
    assert "503" in text and "maintenance" in text
    assert info.value.setting == "max_attempts"
    assert "sources.drone_ops.max_attempts" in text
    assert "retry_budget_seconds" not in text


def test_retry_budget_stops_retrying() -> None:
    """The total time budget ends the retries long before max_attempts."""
    script = Script(then=status(502))
    with make_client(
        script, max_attempts=10_000, retry_budget_seconds=0.2, backoff_max_seconds=0.02
    ) as client:
        started = time.monotonic()
        with pytest.raises(RetriesExhaustedError) as info:
            client.get_json(PATH)
    # 0.2 s of budget, where max_attempts would allow minutes of 20 ms waits; the bound has
    # room for a busy machine and stays far below that
    assert time.monotonic() - started < 10
    assert 2 <= info.value.attempts == len(script.requests) < 10_000
    assert info.value.setting == "retry_budget_seconds"
    assert "sources.drone_ops.retry_budget_seconds" in str(info.value)
    assert "max_attempts" not in str(info.value)


def test_retry_budget_is_not_overrun_by_a_long_wait() -> None:
    """A wait that would end after the budget is not started: the call gives up in budget."""
    # the wait asked for (30 s) is far longer than the budget (0.3 s), so the bound below
    # tells "not started" from "started" with room for a busy machine
    script = Script(then=status(429, **{"Retry-After": "30"}))
    with make_client(script, retry_budget_seconds=0.3, max_retry_after_seconds=30.0) as client:
        started = time.monotonic()
        with pytest.raises(RetriesExhaustedError):
            client.get_json(PATH)
    assert time.monotonic() - started < 10


# --- client errors are not retried ------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "error_type", "fix_words"),
    [
        (400, ApiError, "rejected the request"),
        (401, AuthError, "sources.drone_ops.api_key"),
        (403, AuthError, "scope"),
        (404, NotFoundError, "sources.drone_ops.base_url"),
    ],
)
def test_client_errors_are_not_retried(
    code: int, error_type: type[ApiError], fix_words: str
) -> None:
    """4xx: exactly one request, a typed error naming the endpoint, the API's message and
    what to fix."""
    script = Script(then=status(code, "the API says no"))
    with make_client(script) as client, pytest.raises(ApiError) as info:
        client.get_json("/v1/projects/p1")
    assert len(script.requests) == 1
    assert type(info.value) is error_type
    assert info.value.status == code
    assert info.value.endpoint == "GET /v1/projects/p1"
    text = str(info.value)
    assert text.startswith(f"GET /v1/projects/p1 returned {code}")
    assert "the API says no" in text
    assert fix_words in text


def test_404_uses_the_given_fix() -> None:
    """A caller's not_found_fix replaces the generic 404 advice."""
    script = Script(then=status(404, "Project not found"))
    fix = "check sources.drone_ops.jobs_path (/v1/projects/{project_id}/jobs)"
    with make_client(script) as client, pytest.raises(NotFoundError) as info:
        client.get_json("/v1/projects/p9/jobs", not_found_fix=fix)
    assert info.value.fix == fix
    assert info.value.api_message == "Project not found"
    assert str(info.value).endswith(fix)
    assert len(script.requests) == 1


# --- the API key never leaks ------------------------------------------------------------------

LEAK_SCENARIOS: dict[str, list[Answer]] = {
    "success": [],
    "400": [status(400, "bad cursor")],
    "401": [status(401, "Missing or invalid API key")],
    "403": [status(403, "read only")],
    "404": [status(404, "Not found")],
    "503-exhausted": [status(503)] * 3,
    "429-exhausted": [status(429, **{"Retry-After": "0"})] * 3,
    "connect-exhausted": [httpx.ConnectError("refused")] * 3,
    "timeout-exhausted": [httpx.ReadTimeout("timed out")] * 3,
    "truncated-exhausted": [httpx.Response(200, content=b'{"a": ')] * 3,
}


@pytest.mark.parametrize("scenario", list(LEAK_SCENARIOS))
def test_api_key_never_appears(scenario: str, caplog: pytest.LogCaptureFixture) -> None:
    """The key is sent, yet never shows in exceptions, tracebacks, reprs or DEBUG logs."""
    caplog.set_level(logging.DEBUG)
    script = Script(*LEAK_SCENARIOS[scenario])
    texts: list[str] = []
    with make_client(script, max_attempts=3) as client:
        texts += [repr(client), repr(client._http.auth), str(vars(client))]
        try:
            client.get_json(PATH, params={"archived": "true"})
        except Exception as exc:
            texts += [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]
            texts += [repr(vars(exc))]
    assert script.requests, "no request was made"
    assert all(r.headers["Authorization"] == f"Bearer {CANARY}" for r in script.requests)
    texts.append(caplog.text)
    texts += [repr(record.args) for record in caplog.records]
    for text in texts:
        assert CANARY not in text


def test_empty_api_key_is_a_config_error() -> None:
    """An empty key fails fast, naming the setting (checked once, before any client exists)."""
    with pytest.raises(ConfigError) as info:
        checked_api_key("")
    assert info.value.setting == "sources.drone_ops.api_key"


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://user:{CANARY}@api.example.com",
        f"https://:{CANARY}@/v1",
        f"api.example.com?k={CANARY}",
    ],
)
def test_malformed_base_url_does_not_echo_secrets(url: str) -> None:
    """A base URL carrying a secret is rejected without repeating the secret."""
    with pytest.raises(ConfigError) as info:
        validate_base_url(url)
    assert CANARY not in str(info.value)


# --- pagination -------------------------------------------------------------------------------


def _pages(cursors: dict[str | None, str | None]) -> Callable[[httpx.Request], httpx.Response]:
    """Serves one page per incoming cursor, pointing at the mapped next cursor."""

    def answer(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        return httpx.Response(
            200, json={"projects": [{"id": f"after-{cursor}"}], "cursor": cursors[cursor]}
        )

    return answer


def test_paginate_follows_cursors_to_the_end() -> None:
    """Every page is yielded in order; each request sends the previous cursor and keeps the
    caller's params; the walk stops at a null cursor."""
    handler = _pages({None: "c1", "c1": "c2", "c2": None})
    script = Script(then=handler)
    stats = WalkStats()
    with make_client(script) as client:
        pages = list(client.paginate(PATH, params={"archived": "true"}, stats=stats))
    assert [p["projects"][0]["id"] for p in pages] == ["after-None", "after-c1", "after-c2"]
    assert [r.url.params.get("cursor") for r in script.requests] == [None, "c1", "c2"]
    assert all(r.url.params.get("archived") == "true" for r in script.requests)
    assert (stats.pages, stats.requests) == (3, 3)


def test_paginate_retries_a_page_without_losing_the_cursor() -> None:
    """A transient failure mid-walk retries the same page (same cursor)."""
    handler = _pages({None: "c1", "c1": None})
    script = Script(handler, status(503), then=handler)
    with make_client(script) as client:
        pages = list(client.paginate(PATH))
    assert len(pages) == 2
    assert [r.url.params.get("cursor") for r in script.requests] == [None, "c1", "c1"]


@pytest.mark.parametrize(
    "cursors",
    [{None: "c1", "c1": "c1"}, {None: "c1", "c1": "c2", "c2": "c1"}, {None: 5}],
    ids=["self", "cycle", "not-a-string"],
)
def test_paginate_stops_on_a_cursor_that_does_not_advance(
    cursors: dict[str | None, Any],
) -> None:
    """A repeated (or non-string) cursor raises PaginationError naming the endpoint."""
    script = Script(then=_pages(cursors))
    with make_client(script) as client, pytest.raises(PaginationError) as info:
        list(client.paginate(PATH))
    assert f"GET {PATH}" in str(info.value)
    assert len(script.requests) == len(cursors)


def test_paginate_stops_at_max_pages() -> None:
    """A cursor that never ends stops after max_pages requests with PaginationError."""
    counter = iter(range(1_000))
    script = Script(then=lambda request: httpx.Response(200, json={"cursor": f"c{next(counter)}"}))
    with make_client(script) as client, pytest.raises(PaginationError) as info:
        list(client.paginate(PATH, max_pages=4))
    assert len(script.requests) == 4
    assert "4 pages" in str(info.value) and f"GET {PATH}" in str(info.value)


def test_paginate_exactly_max_pages_is_fine() -> None:
    """A walk of exactly max_pages pages that ends with a null cursor succeeds."""
    script = Script(then=_pages({None: "c1", "c1": "c2", "c2": None}))
    with make_client(script) as client:
        assert len(list(client.paginate(PATH, max_pages=3))) == 3


# --- base URL validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.example.com", "https://api.example.com"),
        ("https://api.example.com/", "https://api.example.com"),
        ("https://api.example.com/drone", "https://api.example.com/drone"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://localhost:8000/", "http://localhost:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_valid_base_urls(url: str, expected: str) -> None:
    """https anywhere, plain http on loopback; a trailing slash is dropped."""
    assert validate_base_url(url) == expected


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", "empty"),
        ("http://api.example.com", "loopback"),
        ("http://10.0.0.5:8000", "loopback"),
        ("https://user:pw@api.example.com", "credentials"),
        ("https://api.example.com?token=x", "query"),
        ("https://api.example.com#top", "fragment"),
        ("https://api.example.com/v1", "/v1"),
        ("https://api.example.com/v1/", "/v1"),
        ("ftp://api.example.com", "http"),
        ("file:///etc/passwd", "http"),
        ("api.example.com", "http"),
    ],
)
def test_invalid_base_urls(url: str, words: str) -> None:
    """Each invalid base URL is a ConfigError naming `sources.drone_ops.base_url` and why."""
    with pytest.raises(ConfigError) as info:
        validate_base_url(url)
    assert info.value.setting == "sources.drone_ops.base_url"
    assert str(info.value).startswith("sources.drone_ops.base_url: ")
    assert words in str(info.value)


def test_settings_refuse_an_invalid_base_url_before_any_client() -> None:
    """An invalid base URL is refused when the settings are read, before any request."""
    with pytest.raises(ConfigError, match=r"sources\.drone_ops\.base_url"):
        read_source_config({"base_url": "http://api.example.com", "api_key": CANARY})


# --- adaptive limiter -------------------------------------------------------------------------


def test_throttled_release_halves_the_limit_down_to_one() -> None:
    """Each throttled release halves the limit (integer division), never below 1."""
    limiter = AdaptiveLimiter(8)
    seen = []
    for _ in range(5):
        limiter.acquire()
        limiter.release(throttled=True)
        seen.append(limiter.limit)
    assert seen == [4, 2, 1, 1, 1]


def test_throttled_release_pauses_acquisitions_for_retry_after() -> None:
    """After a 429 with Retry-After, no request starts until that time has passed."""
    limiter = AdaptiveLimiter(4)
    limiter.acquire()
    released = time.monotonic()
    limiter.release(throttled=True, retry_after=1.0)
    limiter.acquire()
    assert time.monotonic() - released >= 1.0
    limiter.release(throttled=False)
    started = time.monotonic()
    limiter.acquire()
    # the pause is over: no second wait of its length (the bound leaves room for a busy machine)
    assert time.monotonic() - started < 0.5


def test_successes_grow_the_limit_additively_up_to_the_max() -> None:
    """A run of `limit` successes raises the limit by one, up to max_concurrency."""
    limiter = AdaptiveLimiter(4)
    for _ in range(3):
        limiter.acquire()
        limiter.release(throttled=True)
    assert limiter.limit == 1
    history = []
    for _ in range(12):
        limiter.acquire()
        limiter.release(throttled=False)
        history.append(limiter.limit)
    # 1 success at limit 1, 2 at limit 2, 3 at limit 3, then capped at 4
    assert history == [2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4]


def test_throttle_resets_the_success_run() -> None:
    """Successes before a 429 do not count towards the next increase."""
    limiter = AdaptiveLimiter(8)
    limiter.acquire()
    limiter.release(throttled=True)  # 4
    for _ in range(3):
        limiter.acquire()
        limiter.release(throttled=False)
    limiter.acquire()
    limiter.release(throttled=True)  # 2, run reset
    limiter.acquire()
    limiter.release(throttled=False)
    assert limiter.limit == 2


@pytest.mark.parametrize("throttle_first", [False, True])
def test_concurrent_acquire_never_exceeds_the_limit(throttle_first: bool) -> None:
    """Threads never hold more permits than the limit (also after it was halved)."""
    limiter = AdaptiveLimiter(6)
    if throttle_first:
        limiter.acquire()
        limiter.release(throttled=True)  # limit 3
    cap = limiter.limit
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal in_flight, peak
        limiter.acquire()
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
            assert in_flight <= limiter.limit
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        # throttled releases keep the limit from growing back during the test
        limiter.release(throttled=throttle_first)

    threads = [threading.Thread(target=work) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    assert 1 <= peak <= cap
    if not throttle_first:
        assert peak == cap  # the limit is actually used, not just respected


FLOAT_SLACK_S = 1e-6
"""Every reading below and the limiter's own come from one clock (`time.monotonic`), so the
spacing holds exactly; the only slack is the float rounding of `start + interval`, far below a
microsecond. It does not depend on how fast or how loaded the machine is."""


def assert_starts_spaced(asked: list[float], seen: list[float], interval: float) -> None:
    """What a requests-per-second ceiling guarantees, as its caller can observe it.

    The limiter grants each start at one moment, and any two grants are at least `interval`
    apart. A caller cannot see that moment, only that it lies between asking (`asked[k]`, read
    before the call) and seeing the start (`seen[k]`, read after it); a thread preempted in
    between moves `seen[k]` later and shrinks the gap to the next `seen`, so gaps between `seen`
    times prove nothing on a busy machine. What must hold whatever the scheduling: start k is
    seen at least `(k - j)` intervals after start j was asked for, for every j < k (the
    consecutive pairs, and the whole run as an average rate).
    """
    assert len(asked) == len(seen) >= 2
    for j, k in itertools.combinations(range(len(asked)), 2):
        spacing = seen[k] - asked[j]
        assert spacing >= (k - j) * interval - FLOAT_SLACK_S, (j, k, spacing, interval)


def test_requests_per_second_ceiling_spaces_starts() -> None:
    """With max_requests_per_second=20, starts are at least 50 ms apart."""
    limiter = AdaptiveLimiter(8, max_requests_per_second=20)
    asked, started = [], []
    for _ in range(6):
        asked.append(time.monotonic())
        limiter.acquire()
        started.append(time.monotonic())
        limiter.release(throttled=False)
    assert_starts_spaced(asked, started, 1 / 20)


def test_client_requests_per_second_ceiling() -> None:
    """The client applies the ceiling to its requests: the transport sees them spaced."""
    script = Script()
    asked = []
    with make_client(script, max_requests_per_second=25) as client:
        for _ in range(6):
            asked.append(time.monotonic())
            client.get_json(PATH)
    assert len(script.times) == 6
    assert_starts_spaced(asked, script.times, 1 / 25)


def test_a_refused_connection_fails_within_seconds_naming_the_base_url() -> None:
    """Connection refused is retried only briefly, then one error names the base URL: the
    full retry budget is for a busy server, not for a host that is not there."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    started = time.monotonic()
    with (
        DroneOpsClient(
            BASE, "key-123456", transport=httpx.MockTransport(refuse), backoff_initial_seconds=0.01
        ) as client,
        pytest.raises(UnreachableError) as info,
    ):
        client.get_json(PATH)
    assert time.monotonic() - started < settings.SHORT_RETRY_SECONDS
    assert "connection refused" in str(info.value) and BASE in str(info.value)
    assert "sources.drone_ops.base_url" in str(info.value)


def test_a_cancelled_client_sends_nothing_more() -> None:
    """After `cancel()`, a walk ends with `Interrupted` before its next request."""
    script = Script(then=httpx.Response(200, json={"projects": [], "cursor": None}))
    with make_client(script) as client:
        client.cancel()
        with pytest.raises(Interrupted):
            client.get_json(PATH)
    assert script.requests == []


@pytest.mark.parametrize(
    "key", ["ab cd-123456", "abc\x01def-123456", "abc\ndef-123456", "kéy-123456"]
)
def test_a_key_with_inner_whitespace_or_control_characters_is_refused_unseen(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        checked_api_key(key)
    assert "sources.drone_ops.api_key" in str(info.value)
    assert key not in str(info.value) and key.strip() not in str(info.value)


def test_whitespace_around_the_key_is_stripped() -> None:
    """A secrets file's trailing newline must not reach the header (httpx would refuse it and
    quote the header, key included, in its error)."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["Authorization"])
        return httpx.Response(200, json={"ok": True})

    key = checked_api_key("  key-123456\n")
    with DroneOpsClient(BASE, key, transport=httpx.MockTransport(answer)) as client:
        client.get_json(PATH)
    assert sent == ["Bearer key-123456"]


def test_a_page_that_repeats_only_rows_already_seen_ends_the_walk() -> None:
    """A server that hands out a fresh cursor over the same rows forever is stopped at the
    second page, not after 100,000."""
    calls = itertools.count()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"projects": [{"id": "p1"}, {"id": "p2"}], "cursor": f"c{next(calls)}"}
        )

    with (
        DroneOpsClient(BASE, "key-123456", transport=httpx.MockTransport(answer)) as client,
        pytest.raises(PaginationError) as info,
    ):
        list(client.paginate(PATH, items_key="projects"))
    assert next(calls) == 2
    assert "earlier pages" in str(info.value)


def test_consecutive_empty_pages_with_fresh_cursors_end_the_walk() -> None:
    """A server that answers every page with no rows and a new cursor is stopped after
    `MAX_EMPTY_PAGES_IN_A_ROW` such pages, naming the endpoint, not after 100,000."""
    calls = itertools.count()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"projects": [], "cursor": f"c{next(calls)}"})

    with (
        DroneOpsClient(BASE, "key-123456", transport=httpx.MockTransport(answer)) as client,
        pytest.raises(PaginationError) as info,
    ):
        list(client.paginate(PATH, items_key="projects"))
    assert next(calls) == settings.MAX_EMPTY_PAGES_IN_A_ROW
    text = str(info.value)
    assert f"GET {PATH}" in text
    assert f"{settings.MAX_EMPTY_PAGES_IN_A_ROW} empty pages in a row" in text


def test_empty_pages_between_full_ones_do_not_end_the_walk() -> None:
    """Empty pages are fine while rows keep coming: only an unbroken run of them is a loop."""
    below = settings.MAX_EMPTY_PAGES_IN_A_ROW - 1
    rows = [[]] * below + [[{"id": "p1"}]] + [[]] * below + [[{"id": "p2"}]]
    served = itertools.count()

    def answer(request: httpx.Request) -> httpx.Response:
        number = next(served)
        cursor = f"c{number}" if number + 1 < len(rows) else None
        return httpx.Response(200, json={"projects": rows[number], "cursor": cursor})

    with DroneOpsClient(BASE, "key-123456", transport=httpx.MockTransport(answer)) as client:
        pages = list(client.paginate(PATH, items_key="projects"))
    assert [item["id"] for page in pages for item in page["projects"]] == ["p1", "p2"]
    assert len(pages) == len(rows)


def test_a_walk_stops_before_its_next_page_once_told_to() -> None:
    """`stop` is asked before every page after the first: a walk whose table already failed
    sends no further request and ends quietly (the table's failure says why)."""
    script = Script(then=_pages({None: "c1", "c1": "c2", "c2": None}))
    failed = threading.Event()
    with make_client(script) as client:
        pages = client.paginate(PATH, stop=failed.is_set)
        first = next(pages)
        failed.set()
        rest = list(pages)
    assert first["projects"][0]["id"] == "after-None"
    assert rest == []
    assert len(script.requests) == 1
