"""Running `drone-sync` as a scheduler would: a process with its own environment, a clean
working directory, a timeout, and its output captured for the assertions of
test_unattended.py.

`run_cli` forks the process from a zygote that has the sync, the source and dbt imported
(`testkit.zygote`), unless the environment differs from the zygote's in what an interpreter
reads before a fork (then, or with `fresh=True`, it starts a new interpreter): the command, its
environment, working directory, output and exit are the process's own either way."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from testkit.simulator_process import stop_process
from testkit.zygote import Zygote

from .warehouse_check import query

REPO = Path(__file__).resolve().parents[2]
NETGUARD = Path(__file__).resolve().parent / "netguard"
NETGUARD_LOG_ENV = "DRONE_SYNC_NETGUARD_LOG"
TRACEBACK = "Traceback (most recent call last)"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_BUSY = 75
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

ALL_TABLES = (
    "projects",
    "jobs",
    "job_types",
    "team_members",
    "webhooks",
    "webhook_deliveries",
    "users",
)
SETTINGS_PREFIX = "SOURCES__DRONE_OPS__"
# what the caller's environment must not leak into a run: dlt config of any section, the
# terminal width, forced colours, and dlt's own folders
_DROPPED_PREFIXES = (
    "SOURCES__",
    "DESTINATION__",
    "RUNTIME__",
    "NORMALIZE__",
    "EXTRACT__",
    "LOAD__",
    "DLT_",
)
_DROPPED = {"COLUMNS", "LINES", "FORCE_COLOR", "PYTHONPATH", "PYTHONSTARTUP"}


@dataclass
class Result:
    """One finished `drone-sync` process."""

    args: Sequence[str]
    code: int
    out: str
    err: str
    seconds: float

    @property
    def text(self) -> str:
        return f"{self.out}\n{self.err}"

    def lines(self) -> list[str]:
        """Non-blank lines of stdout and stderr, stripped."""
        return meaningful_lines(self.text)

    def describe(self) -> str:
        return (
            f"drone-sync {' '.join(map(repr, self.args))} -> exit {self.code}"
            f" in {self.seconds:.1f}s\n--- stdout ---\n{self.out[-4000:]}"
            f"\n--- stderr ---\n{self.err[-4000:]}"
        )


def meaningful_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def cli_env(
    tmp_path: Path,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: Mapping[str, str | None] | None = None,
    netguard_log: Path | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one run: the caller's minus any dlt config, HOME and dlt's data
    folder inside tmp_path,
    the source configured through SOURCES__DRONE_OPS__* variables. A setting given as None
    is left unset."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_DROPPED_PREFIXES) and name not in _DROPPED
    }
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    # dlt's own folder (and the `drone_ops` link for its tooling) inside tmp_path too: as root
    # dlt ignores HOME and would use the machine's /var/dlt
    env["DLT_DATA_DIR"] = str(dlt_data_dir(tmp_path))
    paths = [str(REPO)]
    if netguard_log is not None:
        paths.insert(0, str(NETGUARD))
        env[NETGUARD_LOG_ENV] = str(netguard_log)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if base_url is not None:
        env[f"{SETTINGS_PREFIX}BASE_URL"] = base_url
    if api_key is not None:
        env[f"{SETTINGS_PREFIX}API_KEY"] = api_key
    for name, value in (settings or {}).items():
        if value is None:
            env.pop(f"{SETTINGS_PREFIX}{name}", None)
        else:
            env[f"{SETTINGS_PREFIX}{name}"] = value
    env.update(extra or {})
    return env


def dlt_data_dir(tmp_path: Path) -> Path:
    """dlt's data folder for a test's runs (DLT_DATA_DIR), beside HOME in tmp_path."""
    return tmp_path / "dlt-data"


def cli_command(args: Sequence[str]) -> list[str]:
    # the entry point `drone-sync` runs, its exit included (`console_script.py`)
    return [sys.executable, "-m", "drone_ops_sync.pipelines.console_script", *args]


HANG_GUARD_S = 600.0
"""How long a CLI run may take before a test calls it hung: ten minutes, far above any run's
pace, since a runner shared with other work makes a 30-second run take several times that."""


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float = HANG_GUARD_S,
    fresh: bool = False,
) -> Result:
    """Runs `drone-sync ARGS` to completion (killed at the timeout) without a terminal; in a
    new interpreter when `fresh` (a behaviour of the process's start or imports)."""
    zygote = None if fresh else _cli_zygote()
    if zygote is None or not zygote.serves(env):
        result = run_command(cli_command(args), env, cwd, timeout=timeout)
        result.args = list(args)
        return result
    return _run_forked(zygote, args, env, cwd, timeout)


def _run_forked(
    zygote: Zygote,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    *,
    stdout_closed: bool = False,
) -> Result:
    """`drone-sync ARGS` forked from `zygote`, to completion (killed at the timeout), its
    output read from files in the zygote's folder; stdout a pipe with no reader when
    `stdout_closed`."""
    global _forks
    _forks += 1
    out, err = (zygote.workdir / f"{_forks}.{name}" for name in ("out", "err"))
    started = time.monotonic()
    pid = zygote.spawn(_cli_order(args, env, cwd, None if stdout_closed else out, err))
    code = zygote.wait(pid, timeout)
    if code is None:
        zygote.kill(pid)
        raise subprocess.TimeoutExpired(cli_command(args), timeout)
    printed = "" if stdout_closed else _read_text(out)
    result = Result(list(args), code, printed, _read_text(err), time.monotonic() - started)
    out.unlink(missing_ok=True)
    err.unlink()
    return result


def _read_text(path: Path) -> str:
    """A file a process wrote, as text, whatever bytes it holds."""
    return path.read_bytes().decode("utf-8", "backslashreplace")


def _cli_order(
    args: Sequence[str], env: Mapping[str, str], cwd: Path, out: Path | None, err: Path
) -> dict[str, Any]:
    """The zygote's order for `drone-sync ARGS`, run as `python -m` would run its script."""
    return {
        "entry": "drone_ops_sync.pipelines.console_script:main",
        "argv": [str(_CONSOLE_SCRIPT), *args],
        "cwd": str(cwd),
        "env": dict(env),
        "stdout": None if out is None else str(out),
        "stderr": str(err),
    }


class Forked:
    """A child of a zygote, through the part of `subprocess.Popen` that the tests use."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid

    @property
    def returncode(self) -> int | None:
        return self.zygote.exit_code(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self.zygote.wait(self.pid, HANG_GUARD_S if timeout is None else timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"drone-sync (pid {self.pid})", timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def closed_from_the_start(args: Sequence[str], env: Mapping[str, str], cwd: Path) -> Result:
    """`drone-sync ARGS` writing into a pipe that nobody reads any more."""
    zygote = _cli_zygote()
    if zygote.serves(env):
        return _run_forked(zygote, args, env, cwd, HANG_GUARD_S, stdout_closed=True)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            cli_command(args),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG_GUARD_S,
        )
    finally:
        os.close(writer)
    return Result(list(args), done.returncode, "", done.stderr, 0.0)


@dataclass
class Piped:
    """A `drone-sync` whose stdout is a pipe the test reads (`stdout`) and may close."""

    process: subprocess.Popen[bytes] | Forked
    stdout: IO[bytes]

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)


@contextmanager
def piped(args: Sequence[str], env: Mapping[str, str], cwd: Path, err: Path) -> Iterator[Piped]:
    """`drone-sync ARGS` with its stdout a pipe the test reads and closes, its stderr in `err`;
    killed by its own handle if it still runs at the end. Forked, the pipe is a FIFO beside
    `err`, read once the child has opened it (a read before would see no writer: the end)."""
    zygote = _cli_zygote()
    if zygote.serves(env):
        fifo = err.with_name(err.name + ".fifo")
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        process = Forked(zygote, zygote.spawn(_cli_order(args, env, cwd, fifo, err)))
        try:
            opened = lambda: _stdout_of(process.pid) == str(fifo)  # noqa: E731
            assert wait_until(lambda: opened() or process.poll() is not None, HANG_GUARD_S)
            os.set_blocking(reader, True)
            with os.fdopen(reader, "rb") as stdout:
                yield Piped(process, stdout)
        finally:
            if process.poll() is None:
                process.kill()
            fifo.unlink()
        return
    with err.open("wb") as err_file:
        popen = subprocess.Popen(
            cli_command(args),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err_file,
        )
        try:
            assert popen.stdout is not None
            yield Piped(popen, popen.stdout)
        finally:
            if popen.poll() is None:
                popen.kill()
                popen.wait(timeout=30)


def _stdout_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/1")
    except OSError:
        return None


_CONSOLE_SCRIPT = REPO / "pipelines" / "console_script.py"
_CLI_PRELOAD = (
    "drone_ops_sync.pipelines.console_script",
    "drone_ops_sync.pipelines.cli",
    "drone_ops_sync.pipelines.run.sync",
    "drone_ops_sync.sources.drone_ops",
    "testkit.zygote:warm_dbt",
)
"""What a `drone-sync run` imports before its work, and dbt's first parse (for the models),
paid once per test process."""
_zygote: Zygote | None = None
_forks = 0


def _cli_zygote() -> Zygote:
    """This test process's CLI zygote, started at its first use (`close_cli_zygote` ends it)."""
    global _zygote
    if _zygote is None or _zygote.process.poll() is not None:
        workdir = Path(tempfile.mkdtemp(prefix="drone-sync-zygote-"))
        _zygote = Zygote(workdir, _CLI_PRELOAD, cli_env(workdir))
    return _zygote


def close_cli_zygote() -> None:
    """Ends the CLI zygote through its handle (at the end of the session) and removes its
    folder."""
    global _zygote
    if _zygote is not None:
        _zygote.close()
        shutil.rmtree(_zygote.workdir, ignore_errors=True)
        _zygote = None


IMPORT_DEFAULTS = {"RUNTIME__DLTHUB_TELEMETRY": "false", "RUNTIME__INTERCEPT_SIGNALS": "false"}


def run_in_process(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Result:
    """`cli.main(ARGS)` in this process, with `env` as the whole environment and `cwd` as the
    working directory (both restored by `monkeypatch`): what a subprocess of `run_cli` would
    do and print, for a behaviour that the process's start, exit and environment do not take
    part in, without the interpreter's start and imports of a process per case."""
    from drone_ops_sync.pipelines.cli import main

    # what `pipelines/__init__.py` sets when a process imports it (dlt's telemetry and signal
    # handling off): imported here long before, and its settings dropped by `cli_env`
    env = {**IMPORT_DEFAULTS, **env}
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    started = time.monotonic()
    try:
        code = main(list(args))
    except SystemExit as exit:  # argparse's usage error, as the process would end
        code = exit.code if isinstance(exit.code, int) else 1
    captured = capsys.readouterr()
    return Result(list(args), code, captured.out, captured.err, time.monotonic() - started)


def run_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float,
    popen: Mapping[str, Any] | None = None,
) -> Result:
    """Runs any command to completion (killed at the timeout), no terminal, output captured;
    `popen` adds arguments of `subprocess.run` (e.g. a `preexec_fn`)."""
    started = time.monotonic()
    completed = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        **(popen or {}),
    )
    return Result(
        list(argv),
        completed.returncode,
        completed.stdout,
        completed.stderr,
        time.monotonic() - started,
    )


class Background:
    """`drone-sync ARGS` started in the background, its output going to files in `logs`: forked
    from the CLI zygote as `run_cli` does, or a new interpreter when `fresh` (or when the zygote
    does not serve `env`)."""

    def __init__(
        self,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        logs: Path,
        name: str,
        *,
        fresh: bool = False,
    ) -> None:
        logs.mkdir(parents=True, exist_ok=True)
        self.args = list(args)
        self.out_path = logs / f"{name}.out"
        self.err_path = logs / f"{name}.err"
        self._out: IO[bytes] = self.out_path.open("wb")
        self._err: IO[bytes] = self.err_path.open("wb")
        self.started = time.monotonic()
        zygote = None if fresh else _cli_zygote()
        self.process: subprocess.Popen[bytes] | Forked
        if zygote is not None and zygote.serves(env):
            self.process = Forked(
                zygote, zygote.spawn(_cli_order(args, env, cwd, self.out_path, self.err_path))
            )
            return
        self.process = subprocess.Popen(
            cli_command(args),
            cwd=cwd,
            env=dict(env),
            stdout=self._out,
            stderr=self._err,
            stdin=subprocess.DEVNULL,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout: float) -> Result:
        """Waits for the exit; raises TimeoutExpired (the process still runs) when it lasts."""
        code = self.process.wait(timeout=timeout)
        return self._result(code)

    def stop(self) -> None:
        """Kills the process if it still runs (its own handle only) and closes the files."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._out.close()
        self._err.close()

    def _result(self, code: int) -> Result:
        self._out.flush()
        self._err.flush()
        return Result(
            self.args,
            code,
            _read_text(self.out_path),
            _read_text(self.err_path),
            time.monotonic() - self.started,
        )


def wait_until(condition: Callable[[], Any], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


HOLD_FOR_WRITING = """
import pathlib, sys, time
import duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SELECT 1").fetchall()
pathlib.Path(sys.argv[2]).write_text("ready")
time.sleep(300)
"""


@contextmanager
def held_for_writing(database: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Another process holding `database` open for writing for the block (as a running sync
    does), stopped by its own handle at the end."""
    ready = database.with_name(database.name + ".holder-ready")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FOR_WRITING, str(database), str(ready)],
        stdin=subprocess.DEVNULL,
    )
    try:
        assert wait_until(ready.exists, 60), "the holder did not open the file"
        yield holder
    finally:
        stop_process(holder)


def closed_loopback_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait(timeout=30)
    try:
        os.kill(child.pid, 0)
    except ProcessLookupError:
        return child.pid
    raise AssertionError(f"pid {child.pid} was reused at once; run the test again")


def names_pid(text: str, pid: int) -> bool:
    """A line says "pid" (any case) and holds the number as a whole word."""
    return any(
        "pid" in line.lower() and re.search(rf"(?<!\d){pid}(?!\d)", line)
        for line in text.splitlines()
    )


def sync_runs(database: Path, dataset: str = "drone_ops") -> list[dict[str, Any]]:
    return query(database, f"SELECT * FROM {dataset}._sync_runs ORDER BY run_id, resource")


def table_counts(database: Path, dataset: str = "drone_ops") -> dict[str, int]:
    """Rows per table of the dataset, `_sync_runs` and `_sync_issues` included."""
    tables = query(
        database,
        "SELECT table_name FROM information_schema.tables"
        f" WHERE table_schema = '{dataset}' ORDER BY table_name",
    )
    return {
        row["table_name"]: query(
            database, f'SELECT count(*) AS n FROM {dataset}."{row["table_name"]}"'
        )[0]["n"]
        for row in tables
    }


def tree_snapshot(root: Path, prefix: str = "") -> dict[str, int]:
    """Path -> mtime of everything under `root` whose top-level name starts with `prefix`."""
    if not root.is_dir():
        return {}
    snapshot: dict[str, int] = {}
    for top in root.iterdir():
        if not top.name.startswith(prefix):
            continue
        for path in [top, *(top.rglob("*") if top.is_dir() else [])]:
            try:
                snapshot[str(path)] = path.stat().st_mtime_ns
            except FileNotFoundError:
                continue
    return snapshot
