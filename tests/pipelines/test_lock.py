"""The run lock's brief holders (the receiver applying a batch of events) and the DuckDB file's
access lock, with real `flock`s between threads (each taking opens its own descriptor, as
another process would)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.lock import (
    BRIEF_WAIT_SECONDS,
    WarehouseBusy,
    access_lock,
    access_lock_path,
    lock_wanted,
    waited_lock,
    warehouse_lock,
)

from .cli_helpers import wait_until

WAIT_S = 60.0
"""A bound for a thread that is stuck, not a pace: on a busy runner a thread may wait its turn
for a long while."""


def _hold(
    path: Path,
    seconds: float,
    brief: bool,
    taken: threading.Event,
    until: threading.Event | None = None,
    released: list[float] | None = None,
) -> threading.Thread:
    """Holds the lock in a thread for `seconds`, or until `until` is set; the moment it lets
    go is appended to `released`."""

    def hold() -> None:
        with warehouse_lock(path, brief=brief):
            taken.set()
            if until is None:
                time.sleep(seconds)
            else:
                until.wait(WAIT_S)
            if released is not None:
                released.append(time.monotonic())

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(WAIT_S)
    return thread


def test_a_run_waits_for_a_brief_holder_and_notes_it(tmp_path: Path) -> None:
    lock = tmp_path / "w.duckdb.lock"
    released: list[float] = []
    holder = _hold(lock, 0.4, brief=True, taken=threading.Event(), released=released)
    notes: list[str] = []
    started = time.monotonic()
    with warehouse_lock(lock, notes):
        got_it = time.monotonic()
    holder.join()
    # it waited for the holder to let go (not a time: a moment the holder recorded), and not
    # past the brief holder's bound
    assert released and released[0] <= got_it, (released, got_it)
    assert got_it - started < BRIEF_WAIT_SECONDS, got_it - started
    assert notes and notes[0].startswith("waited ") and "event receiver" in notes[0], notes


def test_a_run_is_refused_at_once_by_another_run(tmp_path: Path) -> None:
    lock = tmp_path / "w.duckdb.lock"
    let_go = threading.Event()
    released: list[float] = []
    holder = _hold(lock, 0, brief=False, taken=threading.Event(), until=let_go, released=released)
    started = time.monotonic()
    try:
        with pytest.raises(WarehouseBusy, match="another drone-sync run"), warehouse_lock(lock):
            pass
        refused = time.monotonic()
    finally:
        let_go.set()
        holder.join(WAIT_S)
    # refused while the holder still held it (it lets go only when told, after this), and
    # without the wait a brief holder gets (BRIEF_WAIT_SECONDS)
    assert released and refused < released[0]
    assert refused - started < BRIEF_WAIT_SECONDS / 2, refused - started


def test_a_brief_taker_lets_a_waiting_run_go_first(tmp_path: Path) -> None:
    """While a run waits, the receiver's next batch does not take the lock back."""
    lock = tmp_path / "w.duckdb.lock"
    let_go = threading.Event()
    holder = _hold(lock, 0, brief=True, taken=threading.Event(), until=let_go)
    run_has_it = threading.Event()

    def run() -> None:
        with warehouse_lock(lock):
            run_has_it.set()
            time.sleep(0.3)

    waiter = threading.Thread(target=run)
    waiter.start()
    try:
        # the run is waiting once it has said so (its share of the lock's `.want`)
        assert wait_until(lambda: lock_wanted(lock), WAIT_S), "the run never said it waited"
        with (
            pytest.raises(WarehouseBusy, match="a run is waiting"),
            warehouse_lock(lock, brief=True),
        ):
            pass
    finally:
        let_go.set()
        holder.join(WAIT_S)
    waiter.join(WAIT_S)
    assert run_has_it.is_set() and not lock_wanted(lock)
    with warehouse_lock(lock, brief=True):  # the run is done: the receiver's turn again
        pass


def test_file_access_excludes_other_threads_and_nests_in_one(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    order: list[str] = []

    def other() -> None:
        with access_lock(database):
            order.append("other")

    with access_lock(database):
        with access_lock(database):  # the same thread again: no wait, no deadlock
            order.append("nested")
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.2)  # time for the other thread to try (and wait)
        order.append("first")
    thread.join(WAIT_S)
    assert order == ["nested", "first", "other"]


def test_a_turn_that_never_comes_is_busy_after_its_wait(tmp_path: Path) -> None:
    path = tmp_path / "models.lock"
    with waited_lock(path, 5, "the model build"):
        result: list[BaseException] = []

        def late() -> None:
            try:
                with waited_lock(path, 0.2, "the model build"):
                    pass
            except WarehouseBusy as exc:
                result.append(exc)

        thread = threading.Thread(target=late)
        thread.start()
        thread.join(WAIT_S)
    assert result and "waited 0.2 s for the model build" in str(result[0])


WAIT_FOR_FILE = (
    "import sys; from pathlib import Path;"
    " from drone_ops_sync.pipelines.run.lock import access_lock;"
    " access = access_lock(Path(sys.argv[1])); access.__enter__(); print('got it', flush=True)"
)


def test_a_waiter_says_it_waits_until_it_has_the_turn_or_dies(tmp_path: Path) -> None:
    """`lock_wanted` is what tells the event receiver to hand the DuckDB file over: true only
    while a step waits for the access lock, false once it has it, and false when a waiter is
    killed (the kernel drops its share of `<lock>.want`), so a dead waiter cannot keep the
    holder closing the file for nobody."""
    database = tmp_path / "w.duckdb"
    lock = access_lock_path(database)
    assert not lock_wanted(lock)  # nobody ever waited: no file
    got_it = threading.Event()

    def waiter() -> None:
        with access_lock(database):
            got_it.set()

    with access_lock(database):
        assert not lock_wanted(lock)
        thread = threading.Thread(target=waiter)
        thread.start()
        assert wait_until(lambda: lock_wanted(lock), WAIT_S)
        assert not got_it.is_set()
    thread.join(WAIT_S)
    assert got_it.is_set() and not lock_wanted(lock)

    with access_lock(database):
        child = subprocess.Popen(
            [sys.executable, "-c", WAIT_FOR_FILE, str(database)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert wait_until(lambda: lock_wanted(lock), WAIT_S)
        finally:
            child.kill()
            child.wait(WAIT_S)
        assert wait_until(lambda: not lock_wanted(lock), WAIT_S)
