"""The client's connection pool: a connection handed to one thread is never closed under it.

The symptom this guards against, seen about once in ten quiet runs against a fault-free
simulator: `GET /v1/projects/.../jobs failed (ReadError: [Errno 9] Bad file descriptor);
retry 1`. A bad file descriptor is our own process closing the socket, not the server. The
closer is httpcore's pool (1.0.9, encode/httpcore#1110): a pass of `_assign_requests_to_
connections` hands an idle connection to a request, and the connection stays IDLE until that
request's thread calls `handle_request`. Another thread's pass in between sees it idle and, once
its keep-alive timer (httpx's default 5 s) has run out, closes it, after the first thread has
started its request on it.

The test below drives that interleaving on purpose, against a real server on 127.0.0.1 through
`DroneOpsClient`: httpcore's keep-alive clock is advanced at the moment the connection has been
handed out, and the second pass's close is held until the first request has started. It counts
every failed attempt; the fix (no keep-alive timer in the pool: `client.py`) leaves none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpcore
import httpcore._sync.http11 as http11
import pytest

from drone_ops_sync.sources.drone_ops.http.client import DroneOpsClient

WAIT_SECONDS = 20.0
"""Bound of every wait in this file: generous, so that two CPU hogs beside it do not matter."""


class _JsonHandler(BaseHTTPRequestHandler):
    """Answers every GET with an empty page, keeping the connection alive (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b'{"items": [], "cursor": null}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def local_api() -> Iterator[str]:
    """A keep-alive JSON server on 127.0.0.1, stopped through its own handle."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JsonHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="pool-test-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT_SECONDS)


class _Clock:
    """httpcore's keep-alive clock, which the test can move forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


def _wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.0005)


def test_a_connection_handed_to_a_request_is_not_closed_under_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = _Clock()
    monkeypatch.setattr(http11, "time", clock)
    original_close = httpcore.ConnectionPool._close_connections
    first_handed_out = threading.Event()
    second_pass_done = threading.Event()
    threads: dict[str, threading.Thread] = {}
    outcomes: dict[str, Any] = {}

    def close_connections(pool: httpcore.ConnectionPool, closing: list[Any]) -> None:
        """Runs after each pass of the pool, outside its lock: the race's two windows."""
        me = threading.current_thread()
        if me is threads.get("first") and not first_handed_out.is_set():
            # the first request has its connection but has not started on it: the pool's
            # keep-alive timer runs out now, and another thread's pass comes in
            first_handed_out.set()
            clock.offset += 3600.0
            threads["second"].start()
            assert second_pass_done.wait(WAIT_SECONDS), "the second request never reached the pool"
        elif me is threads.get("second") and not second_pass_done.is_set():
            second_pass_done.set()
            if closing:
                # the pass decided to close the connection it had handed to the first request;
                # the close lands once that request has started on it
                _wait_until(lambda: not closing[0].is_idle(), "the first request to start")
        original_close(pool, closing)

    monkeypatch.setattr(httpcore.ConnectionPool, "_close_connections", close_connections)

    with (
        caplog.at_level(logging.INFO, logger="drone_ops_sync"),
        local_api() as url,
        DroneOpsClient(
            url,
            "pool-test-key",
            max_workers=2,
            timeout=2.0,
            max_attempts=3,
            backoff_initial_seconds=0.001,
            backoff_max_seconds=0.002,
        ) as client,
    ):
        client.get_json("/v1/warm")  # one connection, now idle in the pool

        def request(name: str) -> None:
            try:
                outcomes[name] = client.get_json(f"/v1/projects/p-{name}/jobs")
            except Exception as exc:  # reported by the assertions below
                outcomes[name] = exc

        threads["first"] = threading.Thread(target=request, args=("first",), name="first")
        threads["second"] = threading.Thread(target=request, args=("second",), name="second")
        threads["first"].start()
        threads["first"].join(WAIT_SECONDS)
        for thread in threads.values():
            thread.join(WAIT_SECONDS)
            assert not thread.is_alive(), f"{thread.name} request did not end"

    assert first_handed_out.is_set() and second_pass_done.is_set()
    failures = [r.getMessage() for r in caplog.records if " failed (" in r.getMessage()]
    assert failures == [], failures
    assert outcomes == {name: {"items": [], "cursor": None} for name in ("first", "second")}
