"""The urllib3 transport behind the client, over real sockets on 127.0.0.1: every failure a
server can cause leaves as the httpx exception the client already classifies, the read timeout
bounds the whole response (a dripping server), and `close()` ends requests in flight.

Each server here speaks raw HTTP/1.1 from a socket, so a test can drip, cut, reset or garble a
response byte by byte; each is stopped by its own handle."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import httpx
import pytest

from drone_ops_sync.sources.drone_ops.exceptions import (
    Interrupted,
    RetriesExhaustedError,
    UnreachableError,
)
from drone_ops_sync.sources.drone_ops.http.client import DroneOpsClient
from drone_ops_sync.sources.drone_ops.http.transport import Urllib3Transport

BODY = b'{"projects": [{"id": "p1"}], "cursor": null}'
Handler = Callable[[socket.socket, int, threading.Event], None]


class RawServer:
    """Accepts on 127.0.0.1 and hands each connection (and its number, from 0) to `handler`
    in a thread of its own; `stop()` ends them all."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.stopping = threading.Event()
        self.connections = 0
        self.requests = 0
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> RawServer:
        self._accepting.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()
        self._accepting.join(timeout=10)
        for thread in self._threads:
            thread.join(timeout=10)
        assert not any(t.is_alive() for t in [self._accepting, *self._threads])

    def _accept(self) -> None:
        self.listener.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            number = self.connections
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            conn.settimeout(10)
            # an OSError: the client went away, which is what some cases are about
            with contextlib.suppress(OSError):
                self.handler(conn, number, self.stopping)


def read_request(conn: socket.socket) -> bool:
    """Reads one request head; False when the client closed the connection instead."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return False
        data += chunk
    return True


def head(length: int | None = None, *extra: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", *extra]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer_ok(conn: socket.socket, number: int, stopping: threading.Event) -> None:
    """Answers every request on the connection (keep-alive) with BODY."""
    for _ in range(100):
        if not read_request(conn):
            return
        conn.sendall(head(len(BODY)) + BODY)


def reset(conn: socket.socket) -> None:
    """Closes with an RST, not a FIN: the client sees `Connection reset by peer`."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def client_for(server: RawServer, **options: float) -> DroneOpsClient:
    settings: dict[str, Any] = {
        "max_attempts": 1,
        "backoff_initial_seconds": 0.01,
        "backoff_max_seconds": 0.02,
    }
    settings.update(options)
    return DroneOpsClient(server.base_url, "key-123456", **settings)


def test_a_page_is_read_and_the_connection_kept_alive() -> None:
    """Ten requests in a row reuse one connection and each returns the page."""
    with RawServer(answer_ok) as server, client_for(server) as client:
        pages = [client.get_json("/v1/projects") for _ in range(10)]
        assert pages == [{"projects": [{"id": "p1"}], "cursor": None}] * 10
        assert server.connections == 1


def test_a_connection_close_response_is_read_whole() -> None:
    """A server that closes after each response (as the chaos proxy does) is read to the end,
    and the next request opens a new connection."""

    def close_after(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if read_request(conn):
            conn.sendall(head(None, "Connection: close") + BODY)

    with RawServer(close_after) as server, client_for(server) as client:
        for _ in range(3):
            assert client.get_json("/v1/projects")["projects"] == [{"id": "p1"}]
        assert server.connections == 3


def _drip(conn: socket.socket, number: int, stopping: threading.Event) -> None:
    """Answers with headers for 10,000 bytes, then drips a byte every 50 ms (about 500 s)."""
    if not read_request(conn):
        return
    conn.sendall(head(10_000))
    for _ in range(10_000):
        if stopping.wait(0.05):
            return
        conn.sendall(b" ")


def test_the_deadline_cuts_off_a_dripping_body() -> None:
    """A body dripped a byte every 50 ms (each read well within the timeout) is abandoned once
    the whole response has taken the timeout: a `ReadTimeout` naming the setting."""

    transport = Urllib3Transport(2, timeout=0.6)
    with RawServer(_drip) as server, httpx.Client(transport=transport, timeout=0.6) as http:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout) as info:
            http.get(f"{server.base_url}/v1/projects")
        elapsed = time.monotonic() - started
    text = str(info.value)
    assert "whole response took longer than 0.6s (sources.drone_ops.timeout_seconds)" in text
    assert 0.55 <= elapsed < 5.0, elapsed  # the drip would last 500 s


def test_the_client_retries_a_dripping_body_and_gives_up_in_bounded_time() -> None:
    """Through the client: each attempt ends at the deadline, and the attempts are retried."""

    with RawServer(_drip) as server, client_for(server, timeout=0.4, max_attempts=2) as client:
        started = time.monotonic()
        with pytest.raises(RetriesExhaustedError, match="ReadTimeout"):
            client.get_json("/v1/projects")
        assert time.monotonic() - started < 5.0
        assert server.connections == 2


def test_headers_that_never_come_time_out() -> None:
    """A server that accepts and says nothing fails the request after the read timeout."""

    def silent(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        read_request(conn)
        stopping.wait(10)

    transport = Urllib3Transport(2, timeout=0.3)
    with RawServer(silent) as server, httpx.Client(transport=transport, timeout=0.3) as http:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            http.get(f"{server.base_url}/v1/projects")
        assert time.monotonic() - started < 5.0  # the server stays silent for 10 s


def test_a_refused_connection_is_a_connect_error_and_unreachable() -> None:
    """Nothing listening: httpx's `ConnectError`, which the client reports as unreachable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(transport=Urllib3Transport(2)) as http, pytest.raises(httpx.ConnectError):
        http.get(f"{url}/v1/projects")
    with (
        DroneOpsClient(url, "key-123456", backoff_initial_seconds=0.01) as client,
        pytest.raises(UnreachableError, match="connection refused"),
    ):
        client.get_json("/v1/projects")


def test_a_connection_reset_mid_body_is_a_read_error_and_retried() -> None:
    """The first connection is reset halfway through its body; the retry gets the page."""

    def reset_first(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if number > 0:
            answer_ok(conn, number, stopping)
        elif read_request(conn):
            conn.sendall(head(len(BODY)) + BODY[:10])
            reset(conn)

    with RawServer(reset_first) as server:
        with httpx.Client(transport=Urllib3Transport(2)) as http:
            with pytest.raises(httpx.ReadError, match="reset"):
                http.get(f"{server.base_url}/v1/projects")
            assert http.get(f"{server.base_url}/v1/projects").content == BODY
        with client_for(server, max_attempts=3) as client:
            assert client.get_json("/v1/projects")["cursor"] is None


def test_a_reset_before_any_answer_is_a_transport_error() -> None:
    """A connection reset before the status line is an httpx error the client retries."""

    def reset_at_once(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if read_request(conn):
            reset(conn)

    with (
        RawServer(reset_at_once) as server,
        httpx.Client(transport=Urllib3Transport(2)) as http,
        pytest.raises(httpx.TransportError),
    ):
        http.get(f"{server.base_url}/v1/projects")


@pytest.mark.parametrize(
    "body",
    [
        b"10\r\n" + BODY[:16] + b"\r\nZZ\r\n",  # a chunk size that is not hex
        b"40\r\n" + BODY[:20],  # the connection closes inside a chunk
        b"10\r\n" + BODY[:16] + b"\r\n",  # the closing 0-size chunk never comes
    ],
    ids=["malformed-size", "cut-in-chunk", "no-last-chunk"],
)
def test_a_broken_chunked_body_is_a_remote_protocol_error(body: bytes) -> None:
    """A chunked body that is garbled or cut off: httpx's `RemoteProtocolError`, never a page
    made of the part that arrived."""

    def chunked(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if read_request(conn):
            conn.sendall(head(None, "Transfer-Encoding: chunked") + body)

    with (
        RawServer(chunked) as server,
        httpx.Client(transport=Urllib3Transport(2), timeout=5.0) as http,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        http.get(f"{server.base_url}/v1/projects")


def test_a_well_formed_chunked_body_is_read_whole() -> None:
    def chunked(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if read_request(conn):
            half = len(BODY) // 2
            parts = [BODY[:half], BODY[half:]]
            encoded = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
            conn.sendall(head(None, "Transfer-Encoding: chunked") + encoded)

    with RawServer(chunked) as server, httpx.Client(transport=Urllib3Transport(2)) as http:
        assert http.get(f"{server.base_url}/v1/projects").content == BODY


def test_a_body_shorter_than_its_content_length_is_a_remote_protocol_error() -> None:
    def short(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if read_request(conn):
            conn.sendall(head(len(BODY) + 100) + BODY)

    with (
        RawServer(short) as server,
        httpx.Client(transport=Urllib3Transport(2), timeout=5.0) as http,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        http.get(f"{server.base_url}/v1/projects")


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_cancel_ends_requests_in_flight_at_once(phase: str) -> None:
    """`cancel()` ends a request waiting on a silent server (for its headers, or halfway
    through its body) with `Interrupted` in well under its 30 s timeout."""

    def stall(conn: socket.socket, number: int, stopping: threading.Event) -> None:
        if not read_request(conn):
            return
        if phase == "body":
            conn.sendall(head(len(BODY)) + BODY[:10])
        stopping.wait(30)

    outcome: list[BaseException] = []
    with RawServer(stall) as server, client_for(server, timeout=30.0) as client:

        def fetch() -> None:
            try:
                client.get_json("/v1/projects")
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=fetch)
        worker.start()
        waited = time.monotonic()
        while server.connections == 0 and time.monotonic() - waited < 10:
            time.sleep(0.01)
        time.sleep(0.2)  # the request is now waiting on the server
        cancelled = time.monotonic()
        client.cancel()
        worker.join(timeout=10)
        assert not worker.is_alive()
        assert time.monotonic() - cancelled < 5.0  # the timeout is 30 s
    assert len(outcome) == 1 and isinstance(outcome[0], Interrupted), outcome


def test_a_closed_transport_refuses_new_requests() -> None:
    transport = Urllib3Transport(2)
    with RawServer(answer_ok) as server:
        with httpx.Client(transport=transport) as http:
            assert http.get(f"{server.base_url}/v1/projects").content == BODY
        request = httpx.Request("GET", f"{server.base_url}/v1/projects")
        with pytest.raises(RuntimeError, match="closed"):
            transport.handle_request(request)


def test_threads_share_the_pool_and_reuse_its_connections() -> None:
    """Eight threads, 25 requests each, through one client: every page arrives, and no more
    connections are opened than requests were ever in flight at once."""
    pages: list[dict[str, object]] = []
    with RawServer(answer_ok) as server, client_for(server, max_workers=4) as client:

        def fetch() -> None:
            for _ in range(25):
                pages.append(client.get_json("/v1/projects"))

        threads = [threading.Thread(target=fetch) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        connections = server.connections
    assert len(pages) == 200 and all(p["cursor"] is None for p in pages)
    # the limiter lets 4 through at once, and a connection is back in the pool before its
    # request gives up its slot
    assert connections <= 4, connections
