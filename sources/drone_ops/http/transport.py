"""The engine behind the client's httpx interface: urllib3's connection pools.

Why: httpx's own transport costs more CPU per request, and the walk makes tens of thousands of
them (docs/performance.md, "The HTTP engine"). httpx stays the interface; this transport only
moves bytes, and keeps three promises the layers above rely on:

- **A whole-response deadline.** The read timeout bounds each socket read *and* the whole
  response, so a server dripping its body cannot hold a worker past it.
- **httpx's exception vocabulary.** Every urllib3 or socket failure leaves as the httpx
  exception the client already classifies, so nothing above knows which engine ran.
- **Cancellation without closing another thread's socket.** `close()` shuts the sockets in
  flight down, but only the thread that owns a connection ever closes it, and no keep-alive
  timer sweeps the idle queue (httpcore's did: "[Errno 9] Bad file descriptor",
  encode/httpcore#1110).

urllib3 retries and redirects nothing: the client's tenacity policy decides retries.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from http.cookiejar import CookieJar
from typing import Any

import httpx
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ClosedPoolError,
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.exceptions import HTTPError as Urllib3Error

from .. import settings

CHUNK_BYTES = 65_536
"""At most this much per socket read (httpcore's size): the deadline is checked between reads."""

DEADLINE_SLACK_SECONDS = 0.05
"""A read's timeout is shortened to the time left only when that is this much shorter: a
response arriving quickly reads with no extra system call, and the deadline may be passed by
at most this much."""

_HTTP_11 = {"http_version": b"HTTP/1.1"}


class NoCookies(CookieJar):
    """The client's cookie jar, which keeps nothing: the API sets no cookies, yet httpx parses
    every response's headers into a jar (`python -m bench http` shows the cost)."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None


class _Connection(HTTPConnection):
    """Keeps its socket reachable after http.client lets go of it (a `Connection: close`
    response reads on from a socket its connection no longer names)."""

    live_socket: socket.socket | None = None

    def connect(self) -> None:
        super().connect()
        self.live_socket = self.sock


class _HTTPSConnection(_Connection, HTTPSConnection):
    """The same for https: its `connect` is `_Connection`'s over the TLS one."""


class _TrackedPool(urllib3.HTTPConnectionPool):
    """A pool that remembers which connection each thread holds, so `Urllib3Transport.close`
    can shut the sockets of requests in flight down."""

    ConnectionCls: type[HTTPConnection] = _Connection

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.held: dict[int, Any] = {}
        """Thread id -> the connection it took last (one entry per thread, overwritten)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        self.held[threading.get_ident()] = conn
        return conn

    def shut_down_held(self) -> None:
        """Ends every read in flight with an error; never closes a descriptor."""
        for conn in list(self.held.values()):
            sock = getattr(conn, "live_socket", None)
            if sock is None:
                continue
            # an OSError: already closed by its own thread, so there is nothing to end
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.held.clear()


class _TrackedHTTPSPool(urllib3.HTTPSConnectionPool, _TrackedPool):
    """The same for https, verified against httpx's own CA bundle (as httpx's transport is)."""

    ConnectionCls = _HTTPSConnection


class Urllib3Transport(httpx.BaseTransport):
    """One keep-alive urllib3 pool per origin, sized for every thread that sends at once.

    A request beyond `pool_size` opens a connection of its own (closed after use) rather than
    waiting: the client's limiter already bounds what is in flight. Timeouts come from each
    request: `connect`, and `read`, also the deadline of the whole response.
    """

    def __init__(self, pool_size: int = 10, *, timeout: float = 30.0) -> None:
        self._pool_size = max(1, pool_size)
        self._default_timeout = {"connect": min(timeout, 10.0), "read": timeout}
        self._pools: dict[tuple[str, str, int | None], _TrackedPool] = {}
        self._timeouts: dict[tuple[float | None, float | None], urllib3.Timeout] = {}
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout") or self._default_timeout
        read_seconds: float | None = timeouts.get("read")
        started = time.monotonic()
        deadline = None if read_seconds is None else started + read_seconds
        url = request.url
        try:
            response = self._pool(url).urlopen(
                request.method,
                url.raw_path.decode("ascii"),
                body=request.content or None,
                headers={k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw},
                retries=False,
                redirect=False,
                assert_same_host=False,
                timeout=self._timeout(timeouts.get("connect"), read_seconds),
                preload_content=False,
                decode_content=False,
                release_conn=False,
            )
        except ClosedPoolError:
            raise RuntimeError("the HTTP transport was closed") from None
        except (Urllib3Error, OSError, http.client.HTTPException) as exc:
            raise _as_httpx(exc) from None
        try:
            body = _read_body(response, deadline, read_seconds)
        except BaseException:
            # the connection is in an unknown state: drop it, never reuse it
            response.close()
            response.release_conn()
            raise
        response.release_conn()
        return httpx.Response(
            response.status,
            headers=list(response.headers.items()),
            stream=httpx.ByteStream(body),
            extensions=_HTTP_11 if response.version == 11 else {},
        )

    def close(self) -> None:
        """Ends requests in flight (see the module's docstring) and closes idle connections."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
        for pool in pools:
            pool.close()  # first: no request takes a connection from here on
            pool.shut_down_held()

    def _pool(self, url: httpx.URL) -> _TrackedPool:
        key = (url.scheme, url.host, url.port)
        pool = self._pools.get(key)
        if pool is not None:
            return pool
        with self._lock:
            if self._closed:
                raise RuntimeError("the HTTP transport was closed")
            pool = self._pools.get(key)
            if pool is None:
                pool = (
                    _TrackedHTTPSPool(
                        url.host,
                        url.port,
                        maxsize=self._pool_size,
                        block=False,
                        # the trust httpx's own transport would use (certifi, no SSL_CERT_FILE)
                        ssl_context=httpx.create_ssl_context(trust_env=False),
                    )
                    if url.scheme == "https"
                    else _TrackedPool(url.host, url.port, maxsize=self._pool_size, block=False)
                )
                self._pools[key] = pool
        return pool

    def _timeout(self, connect: float | None, read: float | None) -> urllib3.Timeout:
        """urllib3's timeout for these limits, built once: `total` makes the wait for the
        headers share the whole-response deadline with the connect."""
        key = (connect, read)
        made = self._timeouts.get(key)
        if made is None:
            made = urllib3.Timeout(connect=connect, read=read, total=read)
            self._timeouts[key] = made
        return made


def _read_body(
    response: urllib3.BaseHTTPResponse, deadline: float | None, read_seconds: float | None
) -> bytes:
    """The whole body, one socket read at a time, within the deadline."""
    chunks: list[bytes] = []
    sock_timeout = read_seconds
    late = (
        f"the whole response took longer than {read_seconds or 0:g}s"
        f" ({settings.CONFIG_SECTION}.timeout_seconds)"
    )
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise httpx.ReadTimeout(late)
                if sock_timeout is not None and left < sock_timeout - DEADLINE_SLACK_SECONDS:
                    sock_timeout = left
                    live = getattr(response.connection, "live_socket", None)
                    if live is not None:
                        live.settimeout(left)
            chunk = response.read1(CHUNK_BYTES)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except (Urllib3Error, OSError, http.client.HTTPException) as exc:
        problem = _as_httpx(exc)
        if isinstance(problem, httpx.ReadTimeout) and sock_timeout != read_seconds:
            # the read ran out of the time left, not of its own timeout
            raise httpx.ReadTimeout(late) from None
        raise problem from None


def _as_httpx(exc: BaseException) -> httpx.TransportError:
    """The httpx exception httpx's own transport raises for the same failure."""
    text = str(exc)
    if isinstance(exc, NewConnectionError | SSLError):
        # refused, unknown host, TLS: the client's `connect_problem` reads these words
        return httpx.ConnectError(text)
    if isinstance(exc, ConnectTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(exc, ReadTimeoutError | TimeoutError):
        return httpx.ReadTimeout(text)
    if isinstance(exc, ProtocolError):
        cause = next((a for a in exc.args if isinstance(a, BaseException)), None)
        if isinstance(cause, http.client.HTTPException):
            # a body cut short, a bad chunk, no status line: the server broke HTTP
            return httpx.RemoteProtocolError(text)
        return httpx.ReadError(text)
    if isinstance(exc, http.client.HTTPException):
        return httpx.RemoteProtocolError(text)
    if isinstance(exc, OSError):
        return httpx.ReadError(text)
    return httpx.TransportError(text)
