"""The command line contract, signals, the loopback guard and in-process hosting."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from drone_ops_sync.simulator.cli import add_sim_commands
from drone_ops_sync.simulator.server import serve_in_thread
from testkit.simulator_process import stop_process

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "drone_ops_sync.simulator",
            "serve",
            "--port",
            "0",
            "--scale",
            "tiny",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def read_header(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    t = threading.Thread(target=lambda: lines.extend(proc.stdout.readline() for _ in range(3)))  # type: ignore[union-attr]
    t.start()
    t.join(30)
    assert len(lines) == 3, "simulator did not print its header"
    return [line.rstrip("\n") for line in lines]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_prints_header_and_exits_zero_on_signal(sig: signal.Signals) -> None:
    proc = start("--read-key", "RK", "--full-key", "FK", "--seed", "3")
    try:
        header = read_header(proc)
        assert header[0].startswith("base_url=http://127.0.0.1:")
        assert header[1:] == ["read_key=RK", "full_key=FK"]
        base_url = header[0].partition("=")[2]
        assert not base_url.endswith("/v1")
        r = httpx.get(base_url + "/v1/team", headers={"Authorization": "Bearer RK"}, timeout=10)
        assert r.status_code == 200
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        stop_process(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_generated_keys_differ_and_work() -> None:
    proc = start()
    try:
        header = read_header(proc)
        base_url = header[0].partition("=")[2]
        read_key, full_key = header[1].partition("=")[2], header[2].partition("=")[2]
        assert len(read_key) >= 20 and len(full_key) >= 20 and read_key != full_key
        with httpx.Client(base_url=base_url, timeout=10) as c:
            h = {"Authorization": f"Bearer {read_key}"}
            assert c.get("/v1/projects", headers=h).status_code == 200
            r = c.post("/v1/job-types", json={"name": "x"}, headers=h)
            assert r.status_code == 403
            h = {"Authorization": f"Bearer {full_key}"}
            assert c.post("/v1/job-types", json={"name": "x"}, headers=h).status_code == 201
    finally:
        stop_process(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_refuses_non_loopback_host() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "drone_ops_sync.simulator",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert r.returncode == 2 and "--allow-remote" in r.stderr and r.stdout == ""


def test_add_sim_commands_registers_sim_serve() -> None:
    parser = argparse.ArgumentParser(prog="drone-sync")
    add_sim_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        [
            "sim",
            "serve",
            "--port",
            "0",
            "--scale",
            "large",
            "--faults",
            "429:0.10,503:0.05,reset:0.02,truncate:0.01",
            "--latency-ms",
            "0-20",
            "--anchor-date",
            "2026-01-31",
            "--projects",
            "7",
        ]
    )
    assert args.command == "sim" and args.sim_command == "serve"
    assert args.scale == "large" and args.projects == 7 and callable(args.sim_func)
    with pytest.raises(SystemExit):
        parser.parse_args(["sim", "serve", "--faults", "418:0.5"])
    with pytest.raises(SystemExit):
        parser.parse_args(["sim", "serve", "--latency-ms", "20-5"])


def test_serve_in_thread_serves_and_shuts_down() -> None:
    with serve_in_thread(seed=1, scale="tiny", admin=False) as h:
        with h.client(full=False) as c:
            assert c.get("/v1/projects").json()["count"] == 4
        h.set_faults("503:1.0")
        with h.client() as c:
            assert c.get("/v1/projects").status_code == 503
        h.set_faults(None)
        assert h.stats()["requests"]["GET /v1/projects"] == 2
        base_url = h.base_url
    with pytest.raises(httpx.ConnectError):
        httpx.get(base_url + "/v1/projects", timeout=2)
