"""Hosting: build a runtime from options and serve it with uvicorn (httptools + uvloop).

Uvicorn with httptools and uvloop was measured close to the cheapest host for this app (see
shared pitfalls, item 9, and `python -m bench.serve`).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import logging
import secrets
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import httpx
import uvicorn

from .app import build_app
from .events import DeliveryOptions, DeliveryWorker, parse_retry_delays
from .faults import FaultInjector
from .runtime import Runtime
from .store import Options, Store


@dataclass
class ServeConfig:
    """Every `serve` option; the CLI and `serve_in_thread` both build one."""

    host: str = "127.0.0.1"
    port: int = 0
    seed: int = 42
    scale: str = "tiny"
    read_key: str | None = None
    full_key: str | None = None
    faults: str | None = None
    latency_ms: str | None = None
    admin: bool = False
    anchor_date: date | None = None
    horizon_days: int = 365
    allow_remote: bool = False
    counts: dict[str, int | None] = field(default_factory=dict)
    delivery: DeliveryOptions = field(default_factory=DeliveryOptions)
    workspaces: int = 1
    """More than one: a server of that many workspaces (`many.py`), each under `/w/{n}`."""


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _DropIncompleteResponse(logging.Filter):
    """The injected `reset` fault abandons responses on purpose; don't log it as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


def build_runtime(cfg: ServeConfig) -> Runtime:
    """Generate the workspace and wire store, faults and the delivery worker (not started)."""
    if not cfg.allow_remote and not is_loopback_host(cfg.host):
        raise ValueError(
            f"refusing to listen on non-loopback host {cfg.host!r} without --allow-remote"
        )
    options = Options(
        seed=cfg.seed,
        scale=cfg.scale,
        anchor=cfg.anchor_date,
        horizon_days=cfg.horizon_days,
        **cfg.counts,
    )
    store = Store(options)
    return Runtime(
        store=store,
        read_key=cfg.read_key or secrets.token_urlsafe(24),
        full_key=cfg.full_key or secrets.token_urlsafe(24),
        faults=FaultInjector(cfg.seed, cfg.faults, cfg.latency_ms),
        worker=DeliveryWorker(store, cfg.seed, cfg.delivery),
        admin=cfg.admin,
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def base_url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def make_server(app: Any) -> uvicorn.Server:
    """Uvicorn serving an ASGI app: one workspace's (`build_app`) or many's (`many.py`)."""
    logging.getLogger("uvicorn.error").addFilter(_DropIncompleteResponse())
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=30,
        backlog=2048,
    )
    return uvicorn.Server(config)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every handle's clients: httpx builds one per client otherwise,
    loading the system's certificates each time (tens of milliseconds per admin call)."""
    return ssl.create_default_context()


class HandleBase:
    """What every simulator handle offers: URL, keys and pre-authorised clients."""

    base_url: str
    read_key: str
    full_key: str

    def client(self, full: bool = True, timeout: float = 10.0) -> httpx.Client:
        key = self.full_key if full else self.read_key
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            trust_env=False,
            verify=_tls_context(),
        )

    def _admin(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        with self.client(full=True, timeout=timeout) as c:
            r = c.request(method, path, json=body)
            r.raise_for_status()
            return r.json()


class InProcessHandle(HandleBase):
    """A simulator served from a thread of this process; admin methods act directly."""

    def __init__(self, base_url: str, runtime: Runtime) -> None:
        self.base_url = base_url
        self.runtime = runtime
        self.read_key = runtime.read_key
        self.full_key = runtime.full_key
        self.process = None

    def set_faults(self, spec: str | None) -> None:
        self.runtime.faults.set(spec)

    def wait_for_deliveries(self, timeout: float = 10) -> None:
        pending = self.runtime.worker.wait(timeout)
        if pending:
            raise TimeoutError(f"{pending} webhook deliveries still pending")

    def stats(self) -> dict[str, Any]:
        requests = dict(sorted(self.runtime.stats.items()))
        return {"requests": requests, "total": sum(requests.values())}

    def reset_stats(self) -> None:
        self.runtime.stats.clear()

    def churn(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.runtime.store.churn(**kwargs))

    def counts(self) -> dict[str, int]:
        return self.runtime.store.counts()

    def set_delivery_faults(self, spec: str | None) -> dict[str, Any]:
        self.runtime.worker.faults.set(spec)
        return self.delivery_faults()

    def delivery_faults(self) -> dict[str, Any]:
        faults = self.runtime.worker.faults
        return {"faults": faults.spec, "active": faults.state()}

    def set_delivery_retry_delays(self, spec: str | None) -> list[float]:
        self.runtime.worker.set_retry_delays(parse_retry_delays(spec))
        return list(self.runtime.worker.options.retry_delays)

    def set_webhook_secrets(self, secrets: list[str] | None, webhook_id: str | None = None) -> None:
        self.runtime.worker.secrets.set(secrets, webhook_id)

    def deliveries(self, webhook_id: str | None = None) -> list[dict[str, Any]]:
        return self.runtime.worker.deliveries(webhook_id)

    def reset_deliveries(self) -> int:
        return self.runtime.worker.journal.clear()


@dataclass
class _Thread:
    server: uvicorn.Server
    thread: threading.Thread


@contextlib.contextmanager
def serve_in_thread(
    *,
    seed: int = 42,
    scale: str = "tiny",
    faults: str | None = None,
    latency_ms: str | float | None = None,
    admin: bool = True,
    read_key: str | None = None,
    full_key: str | None = None,
    anchor_date: date | None = None,
    horizon_days: int = 365,
    counts: dict[str, int | None] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    delivery: DeliveryOptions | None = None,
) -> Iterator[InProcessHandle]:
    """Run the simulator in a background thread of this process (used by `drone-sync demo`)."""
    cfg = ServeConfig(
        host=host,
        port=port,
        seed=seed,
        scale=scale,
        read_key=read_key,
        full_key=full_key,
        faults=faults,
        latency_ms=None if latency_ms is None else str(latency_ms),
        admin=admin,
        anchor_date=anchor_date,
        horizon_days=horizon_days,
        counts=counts or {},
        delivery=delivery or DeliveryOptions(),
    )
    rt = build_runtime(cfg)
    sock = bind(host, port)
    server = make_server(build_app(rt))
    rt.worker.start()
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="simulator-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        if not server.started:
            raise RuntimeError("simulator server did not start")
        yield InProcessHandle(base_url_of(sock, host), rt)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        rt.worker.stop()
        sock.close()
