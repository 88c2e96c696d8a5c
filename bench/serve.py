"""Simulator speed: list pages per second on one core with keep-alive, and generation time.

Run `python -m bench.serve`. The server runs in a child process pinned to one core;
this process is the client, pinned to another core where possible. Two clients are measured: a
minimal raw-socket HTTP/1.1 client (so the server, not the client, is the bound) and httpx (what
the sync uses), plus the server's own CPU time per page.
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from testkit.simulator_process import stop_process

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc (Linux only; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


class RawClient:
    """Sequential keep-alive HTTP/1.1 GETs over one socket, with almost no client cost."""

    def __init__(self, base_url: str, key: str) -> None:
        u = urlsplit(base_url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.sock = socket.create_connection((self.host, self.port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = f"Host: {self.host}:{self.port}\r\nAuthorization: Bearer {key}\r\n\r\n"
        self.buf = b""

    def get(self, path: str) -> bytes:
        self.sock.sendall(f"GET {path} HTTP/1.1\r\n{self.head}".encode())
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += self._recv()
        self.buf = rest[length:]
        return rest[:length]

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


def _cursor(body: bytes) -> str | None:
    tail = body[body.rfind(b'"cursor":') + 9 : -1]
    return None if tail == b"null" else tail.strip(b'"').decode()


def walk(get: Any, seconds: float, max_pages: int) -> tuple[int, float]:
    """Walk /v1/projects pages (restarting at the end) for a bounded time and page count."""
    pages, cursor = 0, None
    start = time.perf_counter()
    deadline = start + seconds
    while pages < max_pages and time.perf_counter() < deadline:
        path = "/v1/projects" if cursor is None else f"/v1/projects?cursor={cursor}"
        cursor = _cursor(get(path))
        pages += 1
    return pages, time.perf_counter() - start


def walk_children(get: Any, paths: list[str], seconds: float) -> tuple[int, float]:
    """First pages of many job lists / log lists: rows built and encoded on first read."""
    pages = 0
    start = time.perf_counter()
    deadline = start + seconds
    for path in paths:
        if time.perf_counter() >= deadline:
            break
        get(path)
        pages += 1
    return pages, time.perf_counter() - start


def generation_seconds(scale: str) -> float:
    """Time to build the workspace in this process (freed afterwards)."""
    from drone_ops_sync.simulator.store import Options, Store

    start = time.perf_counter()
    store = Store(Options(scale=scale))
    elapsed = time.perf_counter() - start
    del store
    gc.collect()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.serve")
    ap.add_argument("--scale", default="large")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--max-pages", type=int, default=200_000)
    args = ap.parse_args(argv)
    gen_s = generation_seconds(args.scale)

    cmd = [sys.executable, "-m", "drone_ops_sync.simulator", "serve", "--port", "0"]
    cmd += ["--scale", args.scale, "bench-read", "--full-key", "bench-full"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, text=True, cwd=_ROOT, preexec_fn=lambda: _pin(0)
    )
    _pin(1)
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip().partition("=")[2]
        ready = time.perf_counter() - started
        with httpx.Client(base_url=base_url, headers={"Authorization": "Bearer bench-read"}) as c:
            first = orjson.loads(c.get("/v1/projects").content)
            assert first["count"] == 50, first.get("count")
            walk(lambda p: c.get(p).content, 1.0, 2000)  # warm the per-row encoding cache
            cpu0 = _cpu_seconds(proc.pid)
            httpx_pages, httpx_s = walk(lambda p: c.get(p).content, args.seconds, args.max_pages)
            httpx_cpu = _cpu_seconds(proc.pid) - cpu0
        raw = RawClient(base_url, "bench-read")
        try:
            cpu0 = _cpu_seconds(proc.pid)
            raw_pages, raw_s = walk(raw.get, args.seconds, args.max_pages)
            raw_cpu = _cpu_seconds(proc.pid) - cpu0
            ids, cursor = [], None
            for _ in range(40):
                path = "/v1/projects" if cursor is None else f"/v1/projects?cursor={cursor}"
                body = raw.get(path)
                ids += [p["id"] for p in orjson.loads(body)["projects"]]
                cursor = _cursor(body)
                if cursor is None:
                    break
            job_pages, job_s = walk_children(
                raw.get, [f"/v1/projects/{i}/jobs" for i in ids], args.seconds
            )
            hook = orjson.loads(raw.get("/v1/webhooks"))["webhooks"][0]["id"]
            log_pages, cursor = 0, None
            log_start = time.perf_counter()
            while log_pages < 400 and time.perf_counter() - log_start < args.seconds:
                suffix = "" if cursor is None else f"?cursor={cursor}"
                cursor = _cursor(raw.get(f"/v1/webhooks/{hook}{suffix}"))
                log_pages += 1
                if cursor is None:
                    break
            log_s = time.perf_counter() - log_start
        finally:
            raw.close()
    finally:
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()

    print(f"scale={args.scale}: generation {gen_s:.1f} s; server ready after {ready:.1f} s")
    print(
        f"raw keep-alive client: {raw_pages / raw_s:,.0f} pages/s of 50 projects "
        f"(server CPU {1000 * raw_cpu / max(raw_pages, 1):.3f} ms/page)"
    )
    print(
        f"httpx keep-alive client: {httpx_pages / httpx_s:,.0f} pages/s "
        f"(server CPU {1000 * httpx_cpu / max(httpx_pages, 1):.3f} ms/page)"
    )
    print(
        f"job lists (first read of each): {job_pages / job_s:,.0f} pages/s; "
        f"webhook log pages (first read): {log_pages / log_s:,.0f} pages/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
