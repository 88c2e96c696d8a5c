"""A signal that Python could not raise where it arrived (inside a weakref callback, as the
import system's module locks run during an import) prints no traceback, and the command that
ran past it still ends as interrupted."""

from __future__ import annotations

import signal
import weakref
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.cli import main
from drone_ops_sync.pipelines.exit_codes import EXIT_SIGINT
from drone_ops_sync.pipelines.run.signals import SignalStop


class _Collected:
    """Something whose collection runs a callback."""


def swallowed_interrupt(stop: SignalStop) -> None:
    """SIGINT, handled inside a weakref callback: its KeyboardInterrupt is one Python can only
    report (as "Exception ignored in"), and the code goes on."""
    thing = _Collected()
    ref = weakref.ref(thing, lambda _: stop(signal.SIGINT, None))
    del thing
    assert ref() is None


def test_an_interrupt_raised_in_a_weakref_callback_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = SignalStop()
    with stop.installed():
        swallowed_interrupt(stop)
    assert stop.received == signal.SIGINT and stop.missed
    assert capsys.readouterr().err == ""


def test_a_command_that_ran_past_a_swallowed_interrupt_ends_as_interrupted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stop = SignalStop()
    with stop.installed():
        swallowed_interrupt(stop)
    database = tmp_path / "w.duckdb"
    assert main(["status", "--database", str(database)], stop=stop) == EXIT_SIGINT
    err = capsys.readouterr().err.splitlines()
    told = "drone-sync: interrupted: stopped by SIGINT at its end; what the command did is done"
    assert err.count(told) == 1 and "Traceback (most recent call last):" not in err, err
    assert not stop.missed and not database.exists()


def test_each_cooperating_block_has_its_own_token() -> None:
    """A worker runs workspaces one after another under one stop: a run's walk sets its token
    when it closes, and that must not stop the next run; a signal still stops every block."""
    stop = SignalStop()
    with stop.installed():
        with stop.cooperating() as first:
            first.set()  # what a closing walk does to its run's token
        with stop.cooperating() as second:
            assert not second.is_set()
            stop(signal.SIGTERM, None)
            assert second.is_set()
        with stop.cooperating() as after_the_signal:
            assert after_the_signal.is_set()
