"""The client's connection pool: a connection handed to one thread is never closed under it.

The symptom this guards against, seen about once in ten quiet runs against a fault-free
simulator while the client ran on httpx's own engine: `GET /v1/projects/.../jobs failed
(ReadError: [Errno 9] Bad file descriptor); retry 1`. A bad file descriptor is our own process
closing the socket, not the server. The closer was httpcore's pool (1.0.9,
encode/httpcore#1110): one thread's pass handed an idle connection to a request, and another
thread's pass, finding the connection's keep-alive timer run out, closed it after the request
had started on it.

The client's engine is now urllib3 (`http/transport.py`), whose pool cannot do that: an idle
connection waits in a queue, the one thread that takes it owns it until it gives it back, and
nothing sweeps the queue on a timer. The test below holds one request on its connection
(the server answers it only when told) while other threads make many requests through the same
client, then lets it finish: it counts every failed attempt, and there must be none.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from drone_ops_sync.sources.drone_ops.http.client import DroneOpsClient

WAIT_SECONDS = 20.0
"""Bound of every wait in this file: generous, so that two CPU hogs beside it do not matter."""


class _JsonHandler(BaseHTTPRequestHandler):
    """Answers every GET with an empty page, keeping the connection alive (HTTP/1.1); a GET
    of `/v1/held` is answered only once `release` is set."""

    protocol_version = "HTTP/1.1"
    held = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/v1/held":
            _JsonHandler.held.set()
            _JsonHandler.release.wait(WAIT_SECONDS)
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
    _JsonHandler.held.clear()
    _JsonHandler.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JsonHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="pool-test-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _JsonHandler.release.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT_SECONDS)


def test_a_connection_handed_to_a_request_is_not_closed_under_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: dict[str, Any] = {}
    with (
        caplog.at_level(logging.INFO, logger="drone_ops_sync"),
        local_api() as url,
        DroneOpsClient(
            url,
            "pool-test-key",
            max_workers=4,
            timeout=WAIT_SECONDS,
            max_attempts=3,
            backoff_initial_seconds=0.001,
            backoff_max_seconds=0.002,
        ) as client,
    ):
        client.get_json("/v1/warm")  # one connection, now idle in the pool

        def request(name: str, path: str, times: int) -> None:
            try:
                for _ in range(times):
                    outcomes[name] = client.get_json(path)
            except Exception as exc:  # reported by the assertions below
                outcomes[name] = exc

        first = threading.Thread(target=request, args=("first", "/v1/held", 1), name="first")
        first.start()
        assert _JsonHandler.held.wait(WAIT_SECONDS), "the held request never reached the server"
        others = [
            threading.Thread(target=request, args=(f"other-{n}", f"/v1/projects/p{n}/jobs", 40))
            for n in range(3)
        ]
        for thread in others:
            thread.start()
        for thread in others:
            thread.join(WAIT_SECONDS)
        _JsonHandler.release.set()
        first.join(WAIT_SECONDS)
        assert not any(t.is_alive() for t in [first, *others]), "a request did not end"

    failures = [r.getMessage() for r in caplog.records if " failed (" in r.getMessage()]
    assert failures == [], failures
    names = ["first", *(f"other-{n}" for n in range(3))]
    assert outcomes == {name: {"items": [], "cursor": None} for name in names}
