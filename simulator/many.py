"""Many seeded workspaces behind one server: a fleet's API on one port, in one process.

Workspace `n` (0 to count - 1) answers under `/w/{n}`: its base URL is the server's with that
path, which the spec allows (every path is relative to `{base_url}`). Each is the one-workspace
simulator as it is, seeded with `seed + n`, with its own keys (`{read_key}-{n}` and
`{full_key}-{n}`), store, faults, latency, admin routes and webhook senders, so a fleet run and a
test treat it exactly as a workspace of its own. A workspace is generated at its first request:
starting 500 costs nothing until they are used, and one never asked for costs no memory.

The server is one API host, as a platform's customers share one: `GET /_host/arrivals` says how
many API requests (admin routes apart) arrived in all and the most that arrived within any
`window` seconds, so a test or benchmark can hold a fleet to a per-host request budget;
`POST /_host/arrivals/reset` forgets them, so a benchmark counts each of its steps alone.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import time
from collections import deque
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from .app import build_app
from .routes.http import error, json_response
from .runtime import Runtime
from .server import ServeConfig, build_runtime

WORKSPACE_PATH = re.compile(r"^/w/(\d{1,6})(/.*)?$")
MAX_WORKSPACES = 100_000
ARRIVALS_PATH = "/_host/arrivals"
ARRIVALS_RESET_PATH = "/_host/arrivals/reset"
MAX_ARRIVALS = 1_000_000


def workspace_url(base_url: str, n: int | str) -> str:
    """Workspace `n`'s base URL on a server of many workspaces."""
    return f"{base_url}/w/{n}"


class ManyWorkspaces:
    """The ASGI app of a server of `count` workspaces: `/w/{n}/...` is workspace n's `/...`."""

    def __init__(self, cfg: ServeConfig, count: int) -> None:
        if not 1 <= count <= MAX_WORKSPACES:
            raise ValueError(f"workspaces must lie in [1, {MAX_WORKSPACES}]")
        self.cfg = cfg
        self.count = count
        self.read_key: str = cfg.read_key or secrets.token_urlsafe(24)
        self.full_key: str = cfg.full_key or secrets.token_urlsafe(24)
        self._built: dict[int, tuple[Runtime, ASGIApp]] = {}
        self._lock = threading.Lock()
        self._arrivals: deque[float] = deque(maxlen=MAX_ARRIVALS)
        self._workspace(0)  # what is wrong with the options is said now, not at a first request

    def _workspace(self, n: int) -> tuple[Runtime, ASGIApp]:
        """Workspace n, generated and its webhook senders started on first use."""
        built = self._built.get(n)
        if built is not None:
            return built
        with self._lock:
            built = self._built.get(n)
            if built is None:
                cfg = dataclasses.replace(
                    self.cfg,
                    seed=self.cfg.seed + n,
                    read_key=f"{self.read_key}-{n}",
                    full_key=f"{self.full_key}-{n}",
                )
                runtime = build_runtime(cfg)
                runtime.worker.start()
                built = self._built[n] = (runtime, build_app(runtime))
        return built

    def arrivals(self, window: float) -> dict[str, int]:
        """API requests received in all, and the most received within `window` seconds."""
        times = list(self._arrivals)
        peak, first = 0, 0
        for last, at in enumerate(times):
            while at - times[first] > window:
                first += 1
            peak = max(peak, last - first + 1)
        return {"total": len(times), "peak": peak}

    def reset_arrivals(self) -> dict[str, int]:
        """Forgets every arrival so far; returns how many."""
        forgotten = len(self._arrivals)
        self._arrivals.clear()
        return {"forgotten": forgotten}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == ARRIVALS_PATH:
            query = parse_qs(scope.get("query_string", b"").decode())
            window = float(query.get("window", ["1"])[0])
            await json_response(self.arrivals(window))(scope, receive, send)
            return
        if scope["type"] == "http" and scope.get("path") == ARRIVALS_RESET_PATH:
            if scope.get("method") != "POST":
                await error(405, "POST to forget the arrivals")(scope, receive, send)
                return
            await json_response(self.reset_arrivals())(scope, receive, send)
            return
        match = WORKSPACE_PATH.match(scope.get("path", ""))
        if scope["type"] != "http" or match is None or int(match[1]) >= self.count:
            message = f"Not found: workspaces are /w/0 to /w/{self.count - 1}"
            await error(404, message)(scope, receive, send)
            return
        n, rest = int(match[1]), match[2] or "/"
        if not rest.startswith("/_admin"):
            self._arrivals.append(time.monotonic())
        app = self._workspace(n)[1]
        await app(dict(scope, path=rest, raw_path=rest.encode()), receive, send)

    def stop(self) -> None:
        """Stops every started workspace's webhook senders."""
        with self._lock:
            built = list(self._built.values())
        for runtime, _ in built:
            runtime.worker.stop()
