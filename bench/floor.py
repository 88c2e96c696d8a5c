"""The raw HTTP floor: a bare httpx walk of exactly the pages our sync fetches.

Same endpoints and page counts as `sources.drone_ops.walk.WorkspaceWalk`, the same concurrency
shape (a thread pool of `max_workers + 4` threads, at most `max_workers` requests in flight, one
shared keep-alive `httpx.Client`), but no retries, no typing, no Arrow, no load: bodies are read
and discarded. Only what is needed to keep walking is looked at: project and webhook ids (the
list pages are parsed) and the next cursor (found by a byte search at the end of the body).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

PROJECTS = "/v1/projects"
JOBS = "/v1/projects/{project_id}/jobs"
TEAM = "/v1/team"
JOB_TYPES = "/v1/job-types"
WEBHOOKS = "/v1/webhooks"
WEBHOOK = "/v1/webhooks/{webhook_id}"
_CURSOR_KEY = b'"cursor":'


@dataclass
class FloorResult:
    """What one floor walk did."""

    seconds: float
    requests: int
    bytes_read: int


def next_cursor(body: bytes) -> str | None:
    """The top-level `cursor` of a page, without parsing the body (it is the last key)."""
    at = body.rfind(_CURSOR_KEY)
    if at < 0:
        return None
    rest = body[at + len(_CURSOR_KEY) :].lstrip()
    if not rest.startswith(b'"'):
        return None
    end = rest.index(b'"', 1)
    return rest[1:end].decode()


class FloorWalk:
    """One walk; `log_pages=1` walks what a no-change re-sync fetches (first log page only)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        max_workers: int,
        log_pages: int | None = None,
        on_page: Callable[[str, bytes], None] | None = None,
    ) -> None:
        self.max_workers = max(1, max_workers)
        self.log_pages = log_pages
        self.on_page = on_page
        """Called with each page's path and body (the `dlt floor` keeps them; this floor not)."""
        pool = self.max_workers + 4
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=httpx.Timeout(30.0),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            trust_env=False,
        )
        self._slots = threading.BoundedSemaphore(self.max_workers)
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []
        self.requests = 0
        self.bytes_read = 0

    def _get(self, path: str, params: dict[str, str] | None = None) -> bytes:
        with self._slots:
            response = self._http.get(path, params=params)
        body = response.content
        with self._lock:
            self.requests += 1
            self.bytes_read += len(body)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} returned {response.status_code}")
        if self.on_page is not None:
            self.on_page(path, body)
        return body

    def _pages(
        self, path: str, params: dict[str, str] | None = None, limit: int | None = None
    ) -> None:
        """Walks a cursor list (at most `limit` pages), dropping every body."""
        cursor: str | None = None
        count = 0
        while True:
            query = dict(params or {})
            if cursor is not None:
                query["cursor"] = cursor
            body = self._get(path, query)
            count += 1
            cursor = next_cursor(body)
            if cursor is None or (limit is not None and count >= limit):
                return

    def _submit(self, pool: ThreadPoolExecutor, fn: Callable[..., None], *args: Any) -> None:
        future = pool.submit(fn, *args)
        with self._lock:
            self._futures.append(future)

    def _walk_projects(self, pool: ThreadPoolExecutor, params: dict[str, str]) -> None:
        cursor: str | None = None
        while True:
            query = dict(params)
            if cursor is not None:
                query["cursor"] = cursor
            page = orjson.loads(self._get(PROJECTS, query))
            for project in page["projects"]:
                self._submit(pool, self._pages, JOBS.format(project_id=project["id"]))
            cursor = page.get("cursor")
            if cursor is None:
                return

    def _walk_webhooks(self, pool: ThreadPoolExecutor) -> None:
        cursor: str | None = None
        while True:
            page = orjson.loads(self._get(WEBHOOKS, {"cursor": cursor} if cursor else None))
            for hook in page["webhooks"]:
                path = WEBHOOK.format(webhook_id=hook["id"])
                self._submit(pool, self._pages, path, None, self.log_pages)
            cursor = page.get("cursor")
            if cursor is None:
                return

    def run(self) -> FloorResult:
        """Walks the workspace once and returns the wall time and request count."""
        started = time.monotonic()
        with ThreadPoolExecutor(self.max_workers + 4, thread_name_prefix="floor") as pool:
            self._submit(pool, self._walk_projects, pool, {})
            self._submit(pool, self._walk_projects, pool, {"archived": "true"})
            self._submit(pool, self._pages, TEAM)
            self._submit(pool, self._pages, JOB_TYPES)
            self._submit(pool, self._walk_webhooks, pool)
            index = 0
            while True:
                with self._lock:
                    if index >= len(self._futures):
                        break
                    future = self._futures[index]
                future.result()
                index += 1
        seconds = time.monotonic() - started
        self._http.close()
        return FloorResult(seconds, self.requests, self.bytes_read)
