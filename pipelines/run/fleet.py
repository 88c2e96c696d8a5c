"""Several workspaces in one command: at most `parallel` worker processes (`worker.py`), each
running the workspaces it is given one after another, so a process's fixed costs are paid once
per worker; each workspace runs as the single-workspace command would, so one that fails,
hangs or crashes its worker stops no other (docs/fleet.md, "Running"). Processes, not threads:
walks are CPU-bound between round trips and would share one GIL. A signal is passed on to every
worker, and no new workspace starts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..exit_codes import EXIT_BUSY, EXIT_CONFIG, EXIT_FAILED, EXIT_OK

ENDED = "workspace_ended"
"""The event a worker prints after each workspace's run (`worker.py`)."""
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
    worker: int | None = None
    """The process id of the worker that ran it."""

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
    switches = ("full_refresh", "allow_mass_delete", "verbose")
    child += [f"--{name.replace('_', '-')}" for name in switches if getattr(args, name)]
    return [*child, "--no-models", "--no-snapshot"]


def run_fleet(
    names: Sequence[str],
    run_arguments: Sequence[str],
    *,
    parallel: int,
    stop: threading.Event,
    on_finished: Callable[[WorkspaceRun], None],
) -> list[WorkspaceRun]:
    """Runs `drone-sync run --workspace <name> <run_arguments>` for each name in at most
    `parallel` workers, each taking the next waiting workspace when its last one ends;
    `on_finished` hears of each as it ends. A worker that dies fails only the workspace it was
    running, and a new one takes the rest. Outcomes in `names` order."""
    runs = {name: WorkspaceRun(name) for name in names}
    waiting = list(names)
    ended: queue.Queue[_Worker] = queue.Queue()
    workers: list[_Worker] = []
    stopped_at: float | None = None

    def finish(run: WorkspaceRun) -> None:
        run.finished_at = time.monotonic()
        on_finished(run)

    while waiting or workers:
        if not stop.is_set():
            for worker in [worker for worker in workers if worker.current is None]:
                if waiting:
                    worker.give(runs[waiting.pop(0)])
                else:
                    worker.close()
            while waiting and len(workers) < parallel:
                workers.append(_Worker(run_arguments, ended))
                workers[-1].give(runs[waiting.pop(0)])
        elif stopped_at is None:
            stopped_at = time.monotonic()
            waiting.clear()
            for worker in workers:
                worker.stop()
        if stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE_SECONDS:
            for worker in workers:
                worker.process.kill()
        try:
            worker = ended.get(timeout=POLL_SECONDS)
        except queue.Empty:
            continue
        run, worker.done = worker.done, None
        if run is not None:
            finish(run)
        if worker.gone:
            workers.remove(worker)
            worker.reader.join()
            lost = worker.take_lost()
            if lost is not None:
                finish(lost)
    return [runs[name] for name in names]


class _Worker:
    """One worker process, the workspace it runs, and the thread that reads what it says."""

    def __init__(self, run_arguments: Sequence[str], ended: queue.Queue[_Worker]) -> None:
        command = [sys.executable, "-m", "drone_ops_sync.pipelines.run.worker", *run_arguments]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            text=True,
            # its own process group: a Ctrl-C in the terminal reaches the fleet, which passes a
            # SIGTERM on, so each workspace stops once and the same way as under a scheduler
            start_new_session=True,
        )
        self.current: WorkspaceRun | None = None
        self.done: WorkspaceRun | None = None
        self.gone = False
        """Its output ended: it has exited, and everything it said was read."""
        self._ended = ended
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def give(self, run: WorkspaceRun) -> None:
        assert self.process.stdin is not None
        self.current = run
        run.started_at, run.worker = time.monotonic(), self.process.pid
        try:
            self.process.stdin.write(f"{run.name}\n")
            self.process.stdin.flush()
        except OSError:
            self.close()  # it died: its reader reports the end, and the run as lost

    def close(self) -> None:
        """No more workspaces: the worker ends once its input is closed."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def stop(self) -> None:
        self.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def take_lost(self) -> WorkspaceRun | None:
        """The workspace the worker was running when it died, with the worker's code."""
        run, self.current = self.current, None
        if run is not None:
            code = self.process.wait()
            run.exit_code = 128 - code if code < 0 else code or EXIT_FAILED
        return run

    def _read(self) -> None:
        """Keeps each run's final `summary` event; every other line goes to its log."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            run = self.current
            if run is None:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            kind = event.get("event") if isinstance(event, dict) else None
            if kind == ENDED:
                run.exit_code = int(event["exit_code"])
                self.current, self.done = None, run
                self._ended.put(self)
            elif kind == "summary":
                run.summary = event
            else:
                run.log.append(line.rstrip())
        self.process.wait()
        self.gone = True
        self._ended.put(self)
