"""The run's real HTTP to the simulator, with seams a test places at a chosen point of the walk
(passed to a run as `Seams(transport=...)`), so a race or an interruption is made certain by
where it happens instead of hoped for from the machine's timing.

- `after_listing`: called with the first page of active projects, before the run sees it. What
  it changes is certainly newer than the run's listing (the active projects).
- `interrupt_at`: the run's cancel token (`SyncRun.cancel`, what Ctrl-C sets) is set as the
  n-th request is about to be sent, so the run stops at that point of its walk.

The requests themselves go through the client's own engine (`Urllib3Transport`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from drone_ops_sync.sources.drone_ops.internal import Urllib3Transport


class SeamTransport(httpx.BaseTransport):
    def __init__(
        self,
        *,
        after_listing: Callable[[list[dict[str, Any]]], None] | None = None,
        interrupt_at: int | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.inner = Urllib3Transport(16)
        self.after_listing = after_listing
        self.interrupt_at = interrupt_at
        self.cancel = cancel
        self.requests = 0
        self.listed: list[dict[str, Any]] | None = None
        """The page `after_listing` was given, once it has been."""
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.requests += 1
            if self.requests == self.interrupt_at and self.cancel is not None:
                self.cancel.set()
        response = self.inner.handle_request(request)
        listing = request.url.path == "/v1/projects" and "archived" not in request.url.params
        with self._lock:
            first = listing and self.after_listing is not None and self.listed is None
            if first:
                self.listed = []
        if not first:
            return response
        body = response.read()
        self.listed = list(httpx.Response(200, content=body).json()["projects"])
        assert self.after_listing is not None
        self.after_listing(self.listed)
        return httpx.Response(response.status_code, headers=response.headers, content=body)

    def close(self) -> None:
        self.inner.close()
