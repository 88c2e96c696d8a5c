"""SIGINT and SIGTERM while a command runs, and a closed stdout: a sync stops cooperatively,
anything else at once.

The exit codes say which signal ended the command (128 + its number, as shells report it), so a
scheduler can tell an interruption from a failure. A closed stdout (`drone-sync ... | head -1`)
is SIGPIPE's case: Python ignores SIGPIPE, so that sockets report a reset peer as an error
rather than ending the process, and a write to a closed pipe raises `BrokenPipeError` instead.
`guarding_stdout` turns that error into what SIGPIPE means to a Unix tool: the command ends
without a word, with 141 (Python's documentation, "Note on SIGPIPE" in the `signal` module: the
standard output is pointed at /dev/null, so no later write or flush fails again).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TextIO, cast

from ..exit_codes import EXIT_SIGINT, EXIT_SIGPIPE, EXIT_SIGTERM

SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}
"""The signals a command handles, and the code each ends it with."""


class SignalStop:
    """Turns SIGINT/SIGTERM (and a closed stdout) into a cooperative stop while a sync runs;
    outside a sync, or at a second signal, it interrupts at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self.cooperative = False
        self._told = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        if first:
            self.received = signum
            self.event.set()
        if not first or not self.cooperative:
            raise KeyboardInterrupt

    def stdout_closed(self) -> None:
        """What a write to a closed stdout means: SIGPIPE received. Only the main thread is
        interrupted, and only while this stop handles the signals; a writer on another thread
        goes on, its output discarded, and the command ends with 141 at its next stop check. A
        stop already under way goes on as it was."""
        if self.received is not None:
            return
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is self
        ):
            self(signal.SIGPIPE, None)
        else:
            self.received = signal.SIGPIPE
            self.event.set()

    @contextmanager
    def installed(self) -> Iterator[SignalStop]:
        """The handler, for both signals, while the block runs. A `KeyboardInterrupt` it raised
        where Python can only report it ("Exception ignored in", e.g. in a weakref callback
        during an import) is dropped silently: the signal is recorded (`missed`)."""
        previous = {sig: signal.getsignal(sig) for sig in SIGNAL_EXIT}
        previous_hook = sys.unraisablehook

        def unraisable(info: Any) -> None:
            if not (issubclass(info.exc_type, KeyboardInterrupt) and self.received is not None):
                previous_hook(info)

        sys.unraisablehook = unraisable
        for sig in SIGNAL_EXIT:
            signal.signal(sig, self)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            sys.unraisablehook = previous_hook

    @property
    def missed(self) -> bool:
        """A signal arrived, was swallowed where Python could not raise it, and is untold."""
        return self.received is not None and self.received != signal.SIGPIPE and not self._told

    @contextmanager
    def guarding_stdout(self) -> Iterator[None]:
        """`sys.stdout` raises no `BrokenPipeError` while the block runs: a closed pipe is
        `stdout_closed`. Every writer of stdout goes through `sys.stdout` (rich's console, the
        JSON events, the JSON log handler, `print`), so this one place covers them all."""
        original = sys.stdout
        sys.stdout = cast(TextIO, _PipeGuard(original, self))
        try:
            yield
        finally:
            sys.stdout = original

    @contextmanager
    def cooperating(self) -> Iterator[threading.Event]:
        """A signal sets the event the block is given, its own: a run's walk sets its run's
        token when it closes, which must not stop a worker's next run (`worker.py`)."""
        self.event = threading.Event()
        if self.received is not None:
            self.event.set()
        self.cooperative = True
        try:
            yield self.event
        finally:
            self.cooperative = False

    @property
    def exit_code(self) -> int:
        if self.received == signal.SIGPIPE:
            return EXIT_SIGPIPE
        return SIGNAL_EXIT.get(self.received or signal.SIGINT, EXIT_SIGINT)

    def interrupted(self, doing: str, then: str) -> str | None:
        """The one line an interruption prints: which signal stopped what, and what the next
        run does. None for a closed stdout (a silent end, as any Unix tool's) and once given."""
        if self.received == signal.SIGPIPE or self._told:
            return None
        self._told = True
        name = signal.Signals(self.received or signal.SIGINT).name
        return f"stopped by {name}{' ' if doing else ''}{doing}; {then}"


class _PipeGuard:
    """The standard output, except that a write or flush to a closed pipe points the file
    descriptor at /dev/null (what was buffered and whatever comes later is dropped) and tells
    the stop, instead of raising."""

    def __init__(self, stream: TextIO, stop: SignalStop) -> None:
        self._stream = stream
        self._stop = stop

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._closed()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()

    def _closed(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        self._stop.stdout_closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
