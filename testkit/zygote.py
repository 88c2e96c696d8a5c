"""A process that imports the sync once and forks a child per command: the suite starts
many `drone-sync` processes and chaos children, and each fresh interpreter would import dlt,
DuckDB, Arrow (and dbt, for a run that builds the models) again before its command could begin.

`python -m testkit.zygote MODULE...` imports the modules (and calls the `module:function` ones,
such as `warm_dbt`), then reads one JSON order per line from stdin and forks a child for it,
answering `{"pid": N}`; when a child exits it writes `{"exit": N, "code": C}` (C < 0: killed by
signal -C). It ends when stdin closes, once its children have exited. It refuses to fork while
a thread runs that the imports did not start (a child would hold that thread's locks and state
without the thread). An order says what the child runs and where:

- `entry`: `module:function`, called with no arguments once `sys.argv` is `argv` (a
  console script's `main`, which may end the process itself);
- `cwd`, and `env` (the whole environment; absent: the zygote's own) updated by `env_update`;
- `stdout` and `stderr`: files (the same path for one log; a FIFO for a pipe the caller
  reads); `stdout` null: a pipe whose reader has closed. stdin is /dev/null;
- `setsid`: the child leads a session of its own, so a test can signal it alone.

A child's environment gets what the imports added to the zygote's (`drone_ops_sync.pipelines`
sets dlt's defaults when imported) where the order's does not say otherwise, as its imports
would have. What a forked child cannot have is what its interpreter read before the fork: the
environment at start-up (`PYTHON*`, the locale) and at the imports (the malloc and Arrow
settings of `drone_ops_sync.pipelines`). `Zygote.serves` tells whether an environment differs
from the zygote's in any of those; a caller runs a fresh process then. dlt resolves its
runtime settings (`RUNTIME__*`) at first use, in the child.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

READ_AT_START = ("PYTHON", "LANG", "LC_", "MALLOC_", "ARROW_")
"""Variables an interpreter or an import reads before any order arrives."""


def _run_child(order: dict[str, Any], imported: Mapping[str, str]) -> None:
    """In the forked child: place, redirect and run the entry, then end as its process would."""
    code = 1
    try:
        if order.get("setsid"):
            os.setsid()
        os.chdir(order["cwd"])
        if order.get("env") is not None:
            os.environ.clear()
            os.environ.update(order["env"])
        os.environ.update(order.get("env_update") or {})
        for name, value in imported.items():
            os.environ.setdefault(name, value)
        time.tzset()
        tempfile.tempdir = None
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        if order["stdout"] is None:  # a pipe whose reader has gone before the first write
            reader, out = os.pipe()
            os.close(reader)
        else:
            out = os.open(order["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        if order["stderr"] == order["stdout"]:
            os.dup2(out, 2)
        else:
            os.dup2(os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.argv = list(order["argv"])
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        module, _, name = order["entry"].partition(":")
        code = _call(getattr(importlib.import_module(module), name))
        _finish()
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _call(function: Any) -> int:
    """The entry's exit code, as the interpreter would make it of a return or a `SystemExit`."""
    try:
        result = function()
    except SystemExit as exit:
        result = exit.code
    except BaseException:
        traceback.print_exc()
        return 1
    if result is None:
        return 0
    if isinstance(result, int):
        return result
    print(result, file=sys.stderr)
    return 1


def _finish() -> None:
    """What the interpreter does before it ends: waits for the threads that are not daemons,
    then runs the exit handlers."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()


def _status_code(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _reap(out: IO[str], children: set[int]) -> None:
    """Reports the children of ours that have exited (an import may have started a helper
    process of its own, such as multiprocessing's resource tracker: not ours to report)."""
    for pid in sorted(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.discard(pid)
            out.write(json.dumps({"exit": pid, "code": _status_code(status)}) + "\n")
            out.flush()


def _tasks() -> set[str]:
    """The names of this process's threads, native ones included (Linux)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except FileNotFoundError:
        return set()
    return {Path(f"/proc/self/task/{task}/comm").read_text().strip() + f"#{task}" for task in tasks}


def warm_dbt() -> None:
    """Parses the dbt project once, in a throwaway folder: dbt's first invocation in a process
    costs more than any later one (its adapter and macros loaded), whatever the project's
    warehouse path, and a build in a forked child is then a later one.
    The DuckDB file dbt-duckdb keeps open is closed, so a child inherits no connection."""
    import duckdb

    from drone_ops_sync.pipelines.publish.dbt_build import DbtTarget, parse_project
    from drone_ops_sync.pipelines.run.door import release_dbt_duckdb

    folder = Path(tempfile.mkdtemp(prefix="warm-dbt-", dir=os.getcwd()))
    database = folder / "warm.duckdb"
    duckdb.connect(str(database)).close()
    # dbt's static parser (dbt-extractor) starts native threads that a fork would leave behind
    # in the child, where its next parse would wait for them forever: this parse goes without it
    os.environ["DBT_STATIC_PARSER"] = "false"
    try:
        parse_project(DbtTarget.duckdb(database), "drone_ops", folder / "target", {})
    finally:
        del os.environ["DBT_STATIC_PARSER"]
        release_dbt_duckdb()


def serve(preload: Sequence[str]) -> int:
    before = dict(os.environ)
    calls = []
    for entry in preload:
        module, _, function = entry.partition(":")
        loaded = importlib.import_module(module)
        if function:
            calls.append(getattr(loaded, function))
    # the threads the imports started (jemalloc's background thread, with pyarrow) are made to
    # survive a fork; any thread a call leaves running would not
    imported_tasks = _tasks()
    for call in calls:
        call()
    imported = {k: v for k, v in os.environ.items() if before.get(k) != v}
    out = sys.stdout
    stdin = sys.stdin.fileno()
    children: set[int] = set()
    buffer = b""
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.02)
        _reap(out, children)
        if not ready:
            continue
        chunk = os.read(stdin, 1 << 20)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.strip():
                continue
            order = json.loads(line)
            running = _tasks() - imported_tasks
            if threading.active_count() > 1 or running:
                raise RuntimeError(f"threads a fork would copy half-done: {sorted(running)}")
            pid = os.fork()
            if pid == 0:
                _run_child(order, imported)
            children.add(pid)
            out.write(json.dumps({"pid": pid}) + "\n")
            out.flush()
    while children:
        _reap(out, children)
        time.sleep(0.02)
    return 0


class Zygote:
    """Handle of a `testkit.zygote` process started with `env` and `preload`.

    Children are signalled and killed by their own pid; `close()` kills those still running,
    then ends the zygote through its own process handle."""

    def __init__(self, workdir: Path, preload: Sequence[str], env: Mapping[str, str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.env = dict(env)
        self._log = (workdir / "zygote.log").open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "testkit.zygote", *preload],
            cwd=workdir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        self._cond = threading.Condition()
        self._pids: list[int] = []
        self._exits: dict[int, int] = {}
        self._spawned: set[int] = set()
        self._reader = threading.Thread(target=self._read, name="zygote", daemon=True)
        self._reader.start()

    def serves(self, env: Mapping[str, str]) -> bool:
        """Whether a child forked from here sees `env` as a fresh process started with it
        would: it agrees with the zygote's on everything read before the fork."""

        def early(values: Mapping[str, str]) -> dict[str, str]:
            return {k: v for k, v in values.items() if k.startswith(READ_AT_START)}

        return early(env) == early(self.env) and self.process.poll() is None

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            with self._cond:
                if "pid" in message:
                    self._pids.append(int(message["pid"]))
                elif "exit" in message:
                    self._exits[int(message["exit"])] = int(message["code"])
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def spawn(self, order: Mapping[str, Any]) -> int:
        """Forks a child for `order` (see the module's docstring); its pid."""
        assert self.process.stdin is not None
        with self._cond:
            self.process.stdin.write(json.dumps(dict(order)) + "\n")
            self.process.stdin.flush()
            if (
                not self._cond.wait_for(
                    lambda: bool(self._pids) or self.process.poll() is not None, timeout=300
                )
                or not self._pids
            ):
                raise RuntimeError(f"the zygote did not fork a child: see {self._log.name}")
            pid = self._pids.pop(0)
            self._spawned.add(pid)
        return pid

    def exit_code(self, pid: int) -> int | None:
        with self._cond:
            return self._exits.get(pid)

    def wait(self, pid: int, timeout: float) -> int | None:
        """The child's exit code, or None when it did not exit within `timeout`."""
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exits, timeout=timeout)
            return self._exits.get(pid)

    def kill(self, pid: int) -> None:
        """Kills one child of this zygote (by its own pid) and waits for its exit."""
        if self.exit_code(pid) is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if self.wait(pid, 30) is None:
                raise RuntimeError(f"child {pid} survived SIGKILL")

    def close(self) -> None:
        with self._cond:
            running = [pid for pid in self._spawned if pid not in self._exits]
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(timeout=5)
        self._log.close()


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
