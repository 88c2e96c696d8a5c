"""Starts `python -m pipelines.cli listen --port 0` as a subprocess for the receiver's tests and
stops it by its own process handle (SIGTERM, or SIGKILL when a test asks for a crash)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from drone_ops_sync.simulator.signing import sign
from testkit.simulator_process import _read_line, stop_process

SECRET_ENV = "SOURCES__DRONE_OPS__WEBHOOK_SECRET"
STARTUP_TIMEOUT_S = 60.0


@dataclass
class Listener:
    url: str
    process: subprocess.Popen[str]
    spool_dir: Path
    log_file: Path

    def log(self) -> str:
        return self.log_file.read_text()

    def kill(self) -> None:
        """SIGKILL through the handle: the crash the spool must survive."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self) -> int:
        self.process.terminate()
        return self.process.wait(timeout=20)


def event(delivery_id: str, **overrides: Any) -> dict[str, Any]:
    """A payload with the five fields of spec part 6."""
    body = {
        "delivery_id": delivery_id,
        "event": "project.updated",
        "timestamp": 1_700_000_000_000,
        "workspace_id": "ws_1",
        "data": {"id": "prj_1", "name": "Survey"},
    }
    body.update(overrides)
    return body


def post(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    secret: str | None,
    timestamp: int | None = None,
) -> httpx.Response:
    """POSTs the payload, signed with `secret` by the simulator's `sign` when one is given."""
    body = json.dumps(payload).encode()
    headers = {"content-type": "application/json"}
    if secret is not None:
        headers.update(sign(secret, payload["delivery_id"], body, timestamp))
    return client.post(f"{url}/events", content=body, headers=headers)


def listen_command(spool: Path | None, *extra: str, port: int = 0) -> list[str]:
    """`drone-sync listen` on loopback (a free port by default) with its spool in `spool`
    (None: the warehouse's default, `.drone_sync/<file>/events`)."""
    spool_args = ["--spool", str(spool)] if spool is not None else []
    command = [sys.executable, "-m", "drone_ops_sync.pipelines.cli", "listen"]
    return [*command, "--port", str(port), *spool_args, *extra]


@contextlib.contextmanager
def applying_listener(
    tmp_path: Path,
    env: dict[str, str],
    apply_every: float,
    name: str,
    port: int = 0,
    spool: Path | None = None,
    extra: tuple[str, ...] = (),
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`drone-sync listen` applying to `tmp_path/w.duckdb` every `apply_every` seconds (0:
    spool only), with `extra` arguments, its log in `tmp_path/<name>.log`; yields its URL and
    process, and stops it by its own handle."""
    command = listen_command(
        spool,
        "--database",
        str(tmp_path / "w.duckdb"),
        "--apply-every",
        str(apply_every),
        *extra,
        port=port,
    )
    with (tmp_path / f"{name}.log").open("w") as log:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=tmp_path
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("url="), (line, (tmp_path / f"{name}.log").read_text())
        yield line.removeprefix("url="), process
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()


@contextlib.contextmanager
def running_listener(tmp_path: Path, secret: str | None, name: str = "run") -> Iterator[Listener]:
    """The receiver on 127.0.0.1 (a free port) with its spool in `tmp_path/spool`; its log goes
    to `tmp_path/<name>.log`. Stopped on exit unless the test already stopped it."""
    env = dict(os.environ)
    env.pop(SECRET_ENV, None)
    if secret is not None:
        env[SECRET_ENV] = secret
    spool = tmp_path / "spool"
    log_file = tmp_path / f"{name}.log"
    cmd = listen_command(spool)
    with log_file.open("w") as log:
        process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(tmp_path)
        )
    try:
        assert process.stdout is not None
        line = _read_line(process.stdout, time.monotonic() + STARTUP_TIMEOUT_S)
        if not line.startswith("url="):
            raise RuntimeError(f"unexpected listener output: {line!r}; log: {log_file.read_text()}")
        yield Listener(line.removeprefix("url="), process, spool, log_file)
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()
