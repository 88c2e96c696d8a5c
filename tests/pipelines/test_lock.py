"""The run lock (one turn of a workspace at a time, a second refused at once) and the DuckDB
file's access lock (waited for, with the waiter's sign), with real `flock`s between threads
(each taking opens its own descriptor, as another process would)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.lock import (
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
    path: Path, taken: threading.Event, until: threading.Event, released: list[float]
) -> threading.Thread:
    """Holds the run lock in a thread until `until` is set; the moment it lets go is appended
    to `released`."""

    def hold() -> None:
        with warehouse_lock(path):
            taken.set()
            until.wait(WAIT_S)
            released.append(time.monotonic())

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(WAIT_S)
    return thread


def test_a_run_is_refused_at_once_by_another_run(tmp_path: Path) -> None:
    lock = tmp_path / "w.duckdb.lock"
    let_go = threading.Event()
    released: list[float] = []
    holder = _hold(lock, threading.Event(), let_go, released)
    try:
        with (
            pytest.raises(WarehouseBusy, match="another drone-sync run") as refused_by,
            warehouse_lock(lock),
        ):
            pass
        refused = time.monotonic()
    finally:
        let_go.set()
        holder.join(WAIT_S)
    # refused while the holder still held it (it lets go only when told, after this): the
    # refusal did not wait for it
    assert released and refused < released[0]
    assert "pid" in str(refused_by.value) and str(lock.resolve()) in str(refused_by.value)
    assert not lock.with_name(lock.name + ".want").exists(), "nobody waits for the run lock"
    with warehouse_lock(lock):  # the holder is gone: the next turn takes it
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
