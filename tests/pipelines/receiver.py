"""A real HTTP receiver on 127.0.0.1 for the tests of alerts and lineage: it records every POST
(path, headers, JSON body) and answers with a chosen status. Started and stopped by the test
that uses it (`running_receiver`), in a thread of the test process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    raw: str

    @property
    def body(self) -> Any:
        return json.loads(self.raw)


@dataclass
class Receiver:
    url: str
    status: int = 200
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[Received]:
        with self.lock:
            return list(self.requests)


@contextmanager
def running_receiver(status: int = 200) -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 (a free port) until the block ends."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8")
            with receiver.lock:
                receiver.requests.append(Received(self.path, dict(self.headers), raw))
            self.send_response(receiver.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads what was received, not the access log."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}", status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
