"""A process that imports the sync once and forks a child per run: a kill test starts dozens
of child syncs, and each fresh interpreter would spend over a second importing dlt, DuckDB and
Arrow before its run could even begin.

`python -m tests.chaos.zygote` reads one JSON line per child from stdin,
`{"spec": ..., "workdir": ..., "log": ...}`, forks, and answers `{"pid": N}`; when a child
exits it writes `{"exit": N, "code": C}` (C < 0: killed by signal -C). The forked child is a
new session, runs `tests.chaos.child.main` on the spec with its own TMPDIR and log, and exits.
It closes when stdin does.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
from typing import Any

import drone_ops_sync.pipelines.run.sync
import drone_ops_sync.sources.drone_ops  # noqa: F401

from . import child


def _run_child(order: dict[str, Any]) -> None:
    """In the forked child: detach, redirect, run the sync, exit without cleanup handlers."""
    code = 1
    try:
        os.setsid()
        os.chdir(order["workdir"])
        os.environ["TMPDIR"] = order["tmpdir"]
        tempfile.tempdir = None
        log = os.open(order["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        code = child.main(["zygote", order["spec"]])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _reap(out: Any) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.write(json.dumps({"exit": pid, "code": code}) + "\n")
        out.flush()


def main() -> int:
    out = sys.stdout
    stdin = sys.stdin.fileno()
    buffer = b""
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.02)
        _reap(out)
        if not ready:
            continue
        chunk = os.read(stdin, 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.strip():
                continue
            order = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _run_child(order)
            out.write(json.dumps({"pid": pid}) + "\n")
            out.flush()
    # stdin closed: wait for the children still running, then go
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.write(json.dumps({"exit": pid, "code": code}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
