"""The run lock's brief holders (the receiver applying a batch of events) and the DuckDB file's
access lock, with real `flock`s between threads (each taking opens its own descriptor, as
another process would)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.access import duckdb_access, waiting_turn
from drone_ops_sync.pipelines.run.lock import BRIEF_WAIT_SECONDS, WarehouseBusy, warehouse_lock


def _hold(path: Path, seconds: float, brief: bool, taken: threading.Event) -> threading.Thread:
    def hold() -> None:
        with warehouse_lock(path, brief=brief):
            taken.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(5)
    return thread


def test_a_run_waits_for_a_brief_holder_and_notes_it(tmp_path: Path) -> None:
    lock = tmp_path / "w.duckdb.lock"
    holder = _hold(lock, 0.4, brief=True, taken=threading.Event())
    notes: list[str] = []
    started = time.monotonic()
    with warehouse_lock(lock, notes):
        waited = time.monotonic() - started
    holder.join()
    assert 0.2 < waited < BRIEF_WAIT_SECONDS, waited
    assert notes and notes[0].startswith("waited ") and "event receiver" in notes[0], notes


def test_a_run_is_refused_at_once_by_another_run(tmp_path: Path) -> None:
    lock = tmp_path / "w.duckdb.lock"
    holder = _hold(lock, 1.0, brief=False, taken=threading.Event())
    started = time.monotonic()
    with pytest.raises(WarehouseBusy, match="another drone-sync run"), warehouse_lock(lock):
        pass
    assert time.monotonic() - started < 0.9
    holder.join()


def test_a_brief_taker_lets_a_waiting_run_go_first(tmp_path: Path) -> None:
    """While a run waits, the receiver's next batch does not take the lock back."""
    lock = tmp_path / "w.duckdb.lock"
    holder = _hold(lock, 0.5, brief=True, taken=threading.Event())
    run_has_it = threading.Event()

    def run() -> None:
        with warehouse_lock(lock):
            run_has_it.set()
            time.sleep(0.3)

    waiter = threading.Thread(target=run)
    waiter.start()
    time.sleep(0.2)  # the run is waiting now
    with pytest.raises(WarehouseBusy, match="a run is waiting"), warehouse_lock(lock, brief=True):
        pass
    holder.join()
    waiter.join()
    assert run_has_it.is_set()
    with warehouse_lock(lock, brief=True):  # the run is done: the receiver's turn again
        pass


def test_file_access_excludes_other_threads_and_nests_in_one(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    order: list[str] = []

    def other() -> None:
        with duckdb_access(database):
            order.append("other")

    with duckdb_access(database):
        with duckdb_access(database):  # the same thread again: no wait, no deadlock
            order.append("nested")
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.2)
        order.append("first")
    thread.join(5)
    assert order == ["nested", "first", "other"]


def test_a_turn_that_never_comes_is_busy_after_its_wait(tmp_path: Path) -> None:
    path = tmp_path / "models.lock"
    with waiting_turn(path, 5, "the model build"):
        result: list[BaseException] = []

        def late() -> None:
            try:
                with waiting_turn(path, 0.2, "the model build"):
                    pass
            except WarehouseBusy as exc:
                result.append(exc)

        thread = threading.Thread(target=late)
        thread.start()
        thread.join(5)
    assert result and "waited 0.2 s for the model build" in str(result[0])
