"""CPU hogs for `--busy N`: the figures a runner shared with other work sees.

Shared CI runners and the machines these figures were taken on are rarely idle. `--busy N`
measures under a known load: N processes that each spin one core in a tight loop for the
whole invocation. Each hog is bounded in time on its own (it ends after `max_seconds`, or as
soon as its parent is gone), and the benchmark stops each one by its own handle at the end,
so nothing outlives the invocation.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

HOG_SECONDS_BOUND = 4 * 3600.0
"""No benchmark invocation runs this long; a hog whose benchmark vanished ends by then."""

# a tight loop; every million turns it checks its deadline and that its parent is still there
HOG_SCRIPT = """
import os, sys, time
end = time.monotonic() + float(sys.argv[1])
parent = int(sys.argv[2])
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(1_000_000):
        pass
"""


@dataclass
class Hogs:
    """The running hogs and, once stopped, the CPU they used (recorded in the result file)."""

    count: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    started: float = 0.0
    seconds: float = 0.0

    def info(self) -> dict[str, Any]:
        return {
            "hogs": self.count,
            "seconds": round(self.seconds, 1),
            "cpu_seconds": [round(s, 1) for s in self.cpu_seconds],
        }


@contextlib.contextmanager
def cpu_hogs(count: int, max_seconds: float = HOG_SECONDS_BOUND) -> Iterator[Hogs]:
    """Starts `count` hogs for the duration of the block and stops each by its handle."""
    hogs = Hogs(count, started=time.monotonic())
    try:
        for _ in range(count):
            hogs.processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", HOG_SCRIPT, str(max_seconds), str(os.getpid())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        yield hogs
    finally:
        # SIGKILL, not SIGTERM: a hog has nothing to clean up, and an ignored SIGTERM stays
        # ignored across exec, so a hog started by a process that ignores it (seen in a pytest
        # worker after an in-process Dagster run) outlived terminate() and this wait lasted
        # until the hog's time bound
        for process in hogs.processes:
            process.kill()
        for process in hogs.processes:
            try:
                _, _, usage = os.wait4(process.pid, 0)
            except ChildProcessError:  # already reaped
                continue
            process.returncode = -1
            hogs.cpu_seconds.append(usage.ru_utime + usage.ru_stime)
        hogs.seconds = time.monotonic() - hogs.started
