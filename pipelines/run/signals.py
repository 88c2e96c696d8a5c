"""SIGINT and SIGTERM while a command runs: a sync stops cooperatively, anything else at once.

The exit codes say which signal ended the command (128 + its number, as shells report it), so a
scheduler can tell an interruption from a failure.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ..exit_codes import EXIT_SIGINT, EXIT_SIGTERM

SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}


class SignalStop:
    """Turns SIGINT/SIGTERM into a cooperative stop while a sync runs (the walk ends, the
    tables not yet loaded are recorded as interrupted); outside a sync, or at a second
    signal, it interrupts at once."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self.cooperative = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        if first:
            self.received = signum
            self.event.set()
        if not first or not self.cooperative:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[SignalStop]:
        previous = {sig: signal.getsignal(sig) for sig in SIGNAL_EXIT}
        for sig in SIGNAL_EXIT:
            signal.signal(sig, self)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    @contextmanager
    def cooperating(self) -> Iterator[threading.Event]:
        self.cooperative = True
        try:
            yield self.event
        finally:
            self.cooperative = False

    @property
    def exit_code(self) -> int:
        return SIGNAL_EXIT.get(self.received or signal.SIGINT, EXIT_SIGINT)
