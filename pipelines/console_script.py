"""The `drone-sync` process: the command (`cli.main`), then an exit that skips the interpreter's
teardown.

Why: once the command has finished, tearing down every module it loaded (dlt's, sqlglot's,
pyarrow's, DuckDB's) costs CPU that no step of ours needs (docs/performance.md, "The lean
run"): the `atexit` handlers run, the streams are flushed, then
the process ends, unless another thread still runs. Only the process entry points exit this
way (this script, `python -m drone_ops_sync.pipelines.console_script`, a fleet's workers);
`cli.main` stays what tests and in-process callers call.

The SIGINT/SIGTERM handler and the guard of the standard output (`run/signals.py`) are installed
here first, before the command's imports, so that a signal or a closed pipe at any moment ends
the command the same way: one line (none for the pipe) and 130, 143 or 141
(docs/operations.md, "Interrupting a run").
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import NoReturn

from .run.signals import SIGNAL_EXIT, SignalStop


def main() -> NoReturn:
    """Runs the command line and ends the process with its exit code; a signal that the
    command did not handle (one during its imports, or while the last of its output is
    written) ends it with one line and the signal's code."""
    stop = SignalStop()
    code: int | None = None
    try:
        with stop.installed(), stop.guarding_stdout():
            try:
                from .cli import main as command

                code = command(stop=stop)
                sys.stdout.flush()  # what is left of the output: a closed pipe here ends it too
            except KeyboardInterrupt:
                _tell(stop, _STARTING if code is None else _ENDING)
                code = stop.exit_code
            exit_now(code)
    except KeyboardInterrupt:
        # a signal while the handlers were being put in place: the one installed first
        # answered it, before the block above could
        _tell(stop, _STARTING)
        exit_now(stop.exit_code)


def _tell(stop: SignalStop, moment: tuple[str, str]) -> None:
    line = stop.interrupted(*moment)
    if line is not None:
        sys.stderr.write(f"drone-sync: interrupted: {line}\n")


_STARTING = ("while starting", "nothing was changed, so the next run does it all")
_ENDING = ("while writing the last of its output", "what the command did is done")


def exit_now(code: int) -> NoReturn:
    """Ends the process with `code` once the `atexit` handlers ran and the standard streams
    are flushed, without the interpreter's teardown; the ordinary `sys.exit` when a non-daemon
    thread still runs or this Python cannot run the handlers itself."""
    others = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and not thread.daemon
    ]
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if others or run_exit_handlers is None:
        sys.exit(code)
    # the command has ended and said so: a signal now would only interrupt an exit handler
    for sig in SIGNAL_EXIT:
        signal.signal(sig, signal.SIG_IGN)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream: nothing more can be written anyway
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
