"""Several workspaces in one command: each synced by its own `drone-sync run` process.

Why processes, not threads: a walk is CPU-bound between round trips and one process's walks
share one GIL. Each workspace's process is the single-workspace command itself (its own
pipeline, lock, repairs, record and alert), so one that fails, hangs or crashes never stops
another. At most `parallel` run at once (docs/fleet.md); a signal is passed on to each, and no
new one starts. The models are built once, after all of them, by the calling process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..exit_codes import EXIT_BUSY, EXIT_CONFIG, EXIT_FAILED, EXIT_OK

POLL_SECONDS = 0.1
STOP_GRACE_SECONDS = 120.0
"""How long a stopped workspace may take to finish its current load before it is killed."""


@dataclass
class WorkspaceRun:
    """One workspace's process: what it said in its final summary, and when it ran."""

    name: str
    exit_code: int = EXIT_FAILED
    summary: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    finished_at: float = 0.0
    log: list[str] = field(default_factory=list)
    """Its other output lines (JSON events), for `--verbose` and for the cause of a crash."""

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def seconds(self) -> float:
        return self.finished_at - self.started_at

    @property
    def error(self) -> str | None:
        error = self.summary.get("error")
        if error:
            return str(error)
        if self.ok:
            return None
        tail = [line for line in self.log if line.strip()][-1:]
        return f"exited with {self.exit_code}" + (f": {tail[0][:300]}" if tail else "")


def fleet_exit_code(runs: Sequence[WorkspaceRun]) -> int:
    """0 when every workspace succeeded; otherwise the code a scheduler should act on: 2 when
    every failure is a configuration error (retrying will not help), 75 when every failure is
    a busy warehouse (retry soon), else 1."""
    failed = {run.exit_code for run in runs if not run.ok}
    if not failed:
        return EXIT_OK
    if failed == {EXIT_CONFIG}:
        return EXIT_CONFIG
    if failed == {EXIT_BUSY}:
        return EXIT_BUSY
    return EXIT_FAILED


def child_arguments(args: argparse.Namespace) -> list[str]:
    """What each workspace's own `drone-sync run` is given: the fleet's flags, no models (built
    once, after all of them) and no snapshot (published from those models)."""
    child = ["--destination", args.destination, "--dataset", args.dataset]
    if args.database is not None:
        child += ["--database", str(args.database.resolve())]
    if args.resources is not None:
        child += ["--resources", args.resources]
    if args.full_refresh:
        child.append("--full-refresh")
    if args.allow_mass_delete:
        child.append("--allow-mass-delete")
    if args.verbose:
        child.append("--verbose")
    return [*child, "--no-models", "--no-snapshot"]


def run_fleet(
    names: Sequence[str],
    run_arguments: Sequence[str],
    *,
    parallel: int,
    stop: threading.Event,
    on_finished: Any = None,
) -> list[WorkspaceRun]:
    """Runs `drone-sync run --workspace <name> <run_arguments>` for each name, at most
    `parallel` at once; `on_finished` hears of each as it ends. Outcomes in `names` order."""
    runs = {name: WorkspaceRun(name) for name in names}
    waiting = list(names)
    running: dict[str, tuple[subprocess.Popen[str], threading.Thread]] = {}
    stopped_at: float | None = None
    while waiting or running:
        while waiting and len(running) < parallel and not stop.is_set():
            name = waiting.pop(0)
            running[name] = _start(runs[name], run_arguments)
        if stop.is_set() and stopped_at is None:
            stopped_at = time.monotonic()
            waiting.clear()
            for process, _ in running.values():
                process.send_signal(signal.SIGTERM)
        if stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE_SECONDS:
            for process, _ in running.values():
                process.kill()
        for name, (process, reader) in list(running.items()):
            if process.poll() is None:
                continue
            reader.join()
            run = runs[name]
            run.finished_at = time.monotonic()
            run.exit_code = process.returncode
            if run.exit_code < 0:
                run.exit_code = 128 - run.exit_code
            del running[name]
            if on_finished is not None:
                on_finished(run)
        time.sleep(POLL_SECONDS)
    return [runs[name] for name in names]


def _start(
    run: WorkspaceRun, run_arguments: Sequence[str]
) -> tuple[subprocess.Popen[str], threading.Thread]:
    command = [
        sys.executable,
        "-m",
        "drone_ops_sync.pipelines.console_script",
        "run",
        "--log-format",
        "json",
        "--workspace",
        run.name,
        *run_arguments,
    ]
    run.started_at = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
        # its own process group: a Ctrl-C in the terminal reaches the fleet, which passes a
        # SIGTERM on, so each workspace stops once and the same way as under a scheduler
        start_new_session=True,
    )
    reader = threading.Thread(target=_read, args=(process, run), daemon=True)
    reader.start()
    return process, reader


def _read(process: subprocess.Popen[str], run: WorkspaceRun) -> None:
    """Keeps the child's final `summary` event; every other line goes to its log."""
    assert process.stdout is not None
    for line in process.stdout:
        try:
            event = json.loads(line)
        except ValueError:
            run.log.append(line.rstrip())
            continue
        if isinstance(event, dict) and event.get("event") == "summary":
            run.summary = event
        else:
            run.log.append(line.rstrip())
