"""A tiny webhook receiver for the sender's tests: stdlib `http.server` in a thread on 127.0.0.1.

It records every POST (arrival time, path, headers, the exact body bytes) and answers as
configured. It can be stopped and started again on the same port, which is how a test makes
"the receiver is down" and then "it is back". Each test stops what it starts (`stop`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass(frozen=True)
class Arrival:
    """One request as the receiver got it."""

    at: float  # time.monotonic() when it arrived
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        return dict(orjson.loads(self.body))


def free_port() -> int:
    """A port nothing listens on right now (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def signature_matches(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The test's own reading of docs/events.md: HMAC-SHA256 of `{id}.{ts}.{body}`, keyed by
    the base64 after the secret's `whsec_`, base64, as one of the space-separated `v1,` entries
    of `webhook-signature`."""
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    wanted = "v1," + base64.b64encode(digest).decode("ascii")
    return any(hmac.compare_digest(wanted, s) for s in headers["webhook-signature"].split(" "))


class WebhookReceiver:
    """Records POSTs; answers `status` (202 by default) after `latency_s`."""

    def __init__(self, port: int = 0, status: int = 202, latency_s: float = 0.0) -> None:
        self.port = port
        self.status = status
        self.latency_s = latency_s
        self._lock = threading.Lock()
        self._arrivals: list[Arrival] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/events"

    @property
    def arrivals(self) -> list[Arrival]:
        with self._lock:
            return list(self._arrivals)

    def delivery_ids(self) -> list[str]:
        return [a.event["delivery_id"] for a in self.arrivals]

    def start(self) -> WebhookReceiver:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrival = Arrival(
                    time.monotonic(),
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                with outer._lock:
                    outer._arrivals.append(arrival)
                if outer.latency_s:
                    time.sleep(outer.latency_s)
                text = b'{"status":"accepted"}'
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = int(self._server.server_address[1])
        # a short poll interval: `stop` returns within 50 ms rather than half a second
        serve = self._server.serve_forever
        self._thread = threading.Thread(target=serve, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening (the port refuses connections until `start` again)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
