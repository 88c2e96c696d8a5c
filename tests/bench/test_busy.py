"""`--busy N`: the hogs spin while the block runs, are stopped by their handles, and end on
their own when their time bound passes (so none outlives a benchmark that vanished)."""

from __future__ import annotations

import signal
import time

import psutil

from bench.busy import cpu_hogs


def test_hogs_spin_during_the_block_and_are_stopped_after() -> None:
    with cpu_hogs(1) as hogs:
        # spinning is CPU used, so wait for some (a tenth of a second, what `info` rounds to):
        # on a busy machine a hog gets little CPU in its first second
        hog = psutil.Process(hogs.processes[0].pid)
        deadline = time.monotonic() + 120.0  # a bound for a hog that never spins, not a pace
        while sum(hog.cpu_times()[:2]) < 0.1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p.poll() for p in hogs.processes] == [None]
    assert all(p.returncode is not None for p in hogs.processes)
    info = hogs.info()
    assert info["hogs"] == 1
    assert len(info["cpu_seconds"]) == 1 and info["cpu_seconds"][0] > 0.0


def test_a_hog_ends_on_its_own_after_its_bound() -> None:
    with cpu_hogs(1, max_seconds=0.3) as hogs:
        deadline = time.monotonic() + 120.0  # a bound for a hog that never ends, not a pace
        while hogs.processes[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hogs.processes[0].poll() == 0


def test_no_hogs_is_nothing() -> None:
    with cpu_hogs(0) as hogs:
        assert hogs.processes == []
    assert hogs.info() == {"hogs": 0, "seconds": hogs.info()["seconds"], "cpu_seconds": []}


def test_hogs_stop_even_when_started_by_a_process_that_ignores_sigterm() -> None:
    """An ignored signal stays ignored across exec: a pytest worker that ignores SIGTERM (left
    so by earlier tests) once started hogs that outlived their stop, until the test's timeout."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with cpu_hogs(1) as hogs:
            pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert all(p.returncode is not None for p in hogs.processes)
