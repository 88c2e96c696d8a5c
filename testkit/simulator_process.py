"""Helpers that start a simulator in a subprocess, for tests and benchmarks.

`running_simulator` runs `python -m simulator serve --port 0` as a subprocess and stops it by its
own process handle; its `SimulatorHandle` has the same methods as the `InProcessHandle` that
`server.serve_in_thread` yields for a simulator in this process (the demo's).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

from drone_ops_sync.simulator import names
from drone_ops_sync.simulator.server import HandleBase

_REPO_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 120.0
DELIVERIES_SETTLE_S = 300.0
"""How long `wait_for_deliveries` waits for every delivery to settle before it fails: minutes, a
bound for a stuck sender, not a pace (it returns as soon as nothing is pending)."""


class SimulatorHandle(HandleBase):
    """A simulator running as a subprocess; admin methods need it started with --admin."""

    def __init__(
        self, base_url: str, read_key: str, full_key: str, process: subprocess.Popen[str]
    ) -> None:
        self.base_url = base_url
        self.read_key = read_key
        self.full_key = full_key
        self.process = process

    def workspace(self, n: int) -> SimulatorHandle:
        """Workspace `n` of a simulator started with `--workspaces N` (its URL and keys are
        templates in `{n}`), a handle of its own on the same process."""
        url, read_key, full_key = (
            t.format(n=n) for t in (self.base_url, self.read_key, self.full_key)
        )
        return SimulatorHandle(url, read_key, full_key, self.process)

    def set_faults(self, spec: str | None) -> None:
        self._admin("PUT", names.ADMIN_FAULTS_PATH, {"faults": spec})

    def set_gate(self, closed: bool) -> dict[str, Any]:
        """Close (hold every API request) or open the simulator's gate; `{"closed", "held"}`."""
        return dict(self._admin("PUT", names.ADMIN_GATE_PATH, {"closed": closed}))

    def gate(self) -> dict[str, Any]:
        """`{"closed", "held"}`: held counts the requests held since the gate closed."""
        return dict(self._admin("GET", names.ADMIN_GATE_PATH))

    def wait_for_deliveries(self, timeout: float = DELIVERIES_SETTLE_S) -> None:
        res = self._admin("POST", names.ADMIN_WAIT_PATH, {"timeout": timeout}, timeout=timeout + 5)
        if res["pending"]:
            raise TimeoutError(f"{res['pending']} webhook deliveries still pending")

    def stats(self) -> dict[str, Any]:
        return dict(self._admin("GET", names.ADMIN_STATS_PATH))

    def reset_stats(self) -> None:
        self._admin("POST", names.ADMIN_STATS_RESET_PATH)

    def churn(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self._admin("POST", names.ADMIN_CHURN_PATH, kwargs, timeout=120))

    def counts(self) -> dict[str, int]:
        return dict(self._admin("GET", names.ADMIN_COUNTS_PATH))

    def edit(
        self,
        list_name: str,
        record_id: str | None = None,
        fields: dict[str, Any] | None = None,
        *,
        delete: bool = False,
    ) -> dict[str, Any]:
        """One record edited as in the dashboard (`simulator/store/edits.py`): fields set, a
        team member or job type added, or the record deleted; returns it as stored."""
        body = {"list": list_name, "id": record_id, "set": fields or {}, "delete": delete}
        return dict(self._admin("POST", names.ADMIN_EDIT_PATH, body))

    def set_delivery_faults(self, spec: str | None) -> dict[str, Any]:
        """Replace the webhook delivery faults; returns `{"faults", "active"}`."""
        return dict(self._admin("PUT", names.ADMIN_DELIVERY_FAULTS_PATH, {"faults": spec}))

    def delivery_faults(self) -> dict[str, Any]:
        """The delivery faults configured and the counts left of each."""
        return dict(self._admin("GET", names.ADMIN_DELIVERY_FAULTS_PATH))

    def set_delivery_retry_delays(self, spec: str | None) -> list[float]:
        """Replace the retry schedule (`0.5,1,2`; None: no retries); returns the new one."""
        body = self._admin("PUT", names.ADMIN_DELIVERY_RETRIES_PATH, {"delays": spec})
        return [float(d) for d in body["delays"]]

    def set_webhook_secrets(self, secrets: list[str] | None, webhook_id: str | None = None) -> None:
        """Sign every webhook's deliveries (or one webhook's) with these secrets; [] unsigned."""
        body: dict[str, Any] = {"secrets": secrets}
        if webhook_id is not None:
            body["webhook_id"] = webhook_id
        self._admin("PUT", names.ADMIN_WEBHOOK_SECRET_PATH, body)

    def deliveries(self, webhook_id: str | None = None) -> list[dict[str, Any]]:
        """Every delivery since start (or reset), oldest first, each with its attempts."""
        path = names.ADMIN_DELIVERIES_PATH
        if webhook_id is not None:
            path += f"?webhook_id={webhook_id}"
        return list(self._admin("GET", path)["deliveries"])

    def reset_deliveries(self) -> int:
        """Forget the settled deliveries of the journal; returns how many."""
        return int(self._admin("POST", names.ADMIN_DELIVERIES_RESET_PATH)["forgotten"])


def _read_line(stream: IO[str], deadline: float) -> str:
    """One stdout line, bounded in time (a reader thread, since pipes have no timeout)."""
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    t.start()
    t.join(max(deadline - time.monotonic(), 0.1))
    if not box:
        raise TimeoutError("simulator did not print its address in time")
    return box[0].strip()


def _wait_until_serving(base_url: str, deadline: float) -> None:
    """Returns once the server answers a request. The address is printed while the socket is
    bound but before the server has put its own SIGTERM handler in place (until then the
    process ignores SIGTERM), so a simulator stopped before it ever answered would cost
    `stop_process` its whole wait. `/openapi.json` is outside the API's stats, faults, gate
    and latency, so the request changes nothing a test counts."""
    with httpx.Client(base_url=base_url, timeout=5.0) as client:
        while True:
            try:
                client.get(names.OPENAPI_PATH)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise TimeoutError("the simulator did not answer in time") from None
                time.sleep(0.05)


def stop_process(process: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Terminate, wait, then kill: always through the process's own handle."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)


@contextlib.contextmanager
def running_simulator(
    *,
    seed: int = 42,
    scale: str = "tiny",
    faults: str | None = None,
    latency_ms: str | float | None = None,
    admin: bool = True,
    extra_args: Sequence[str] = (),
) -> Iterator[SimulatorHandle]:
    """Start `python -m simulator serve --port 0 ...` and yield a handle; stop it on exit."""
    cmd = [
        sys.executable,
        "-m",
        "drone_ops_sync.simulator",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--seed",
        str(seed),
        "--scale",
        scale,
    ]
    if faults:
        cmd += ["--faults", faults]
    if latency_ms is not None:
        cmd += ["--latency-ms", str(latency_ms)]
    if admin:
        cmd.append("--admin")
    cmd += list(extra_args)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    process = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=None, text=True, env=env, cwd=str(_REPO_ROOT)
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        values: dict[str, str] = {}
        for _ in range(3):
            line = _read_line(process.stdout, deadline)
            key, _, value = line.partition("=")
            values[key] = value
        if "base_url" not in values:
            raise RuntimeError(f"unexpected simulator output: {values}")
        _wait_until_serving(values["base_url"], deadline)
        yield SimulatorHandle(values["base_url"], values["read_key"], values["full_key"], process)
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()
