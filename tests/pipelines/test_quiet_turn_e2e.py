"""A quiet turn: a run that finds nothing changed makes no dlt extract (its groups are finished
without dlt: `finish_quiet_tables`), and the turn keeps the DuckDB file open across the steps
that follow one another, handing it over to a step that waits (`pipelines/run/door.py`).

What is checked, from dlt's working folder, the warehouse and other processes, not from the
code under test: a quiet run leaves dlt's schema, trace and package folders exactly as the
run before left them (dlt's tooling still shows that run's loads) while its record is
written; the turn's file is kept open after a step (a program ignoring the lock cannot open
it) and is let go as soon as another process waits for it, or when the turn releases it.
A run that ends while its walk's thread still winds down (its stages all done) is not taken
for an interrupted one: it records its delivery marks, and the next quiet run walks no log
again.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.door import KeptFile
from drone_ops_sync.pipelines.run.lock import access_lock_path, holds_lock, lock_wanted
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops.walk import WorkspaceWalk
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import wait_until
from .test_events_write import warehouse
from .test_listen_connections import READ_IN_TURN, WAIT_S, _opens
from .test_run_record_e2e import record_loads, sync
from .warehouse_check import query

pytestmark = pytest.mark.e2e
LINGER_S = 0.5
"""How long the walk's thread outlives its stages in `lingering_walk`."""


def _working_files(target: Target) -> dict[str, bytes]:
    """Every file of dlt's working folder but its local state (`state.json`, which making
    the pipeline writes), with its content."""
    working = target.working_dir()
    return {
        str(path.relative_to(working)): path.read_bytes()
        for path in sorted(working.rglob("*"))
        if path.is_file() and path.name != "state.json"
    }


def test_a_quiet_run_makes_no_dlt_extract(tiny_sim: SimulatorHandle, any_target: Target) -> None:
    target = any_target
    sync(target, tiny_sim)
    before = _working_files(target)
    trace = make_pipeline(target).last_trace
    assert trace is not None and any(step.step == "extract" for step in trace.steps)

    quiet = sync(target, tiny_sim)

    assert all(
        result.status == "success" and result.loaded and not result.new + result.changed
        for result in quiet.report.tables.values()
    ), quiet.report.tables
    # no schema merged, no package written or dropped, no trace saved: dlt was not asked
    assert _working_files(target) == before
    kept = make_pipeline(target).last_trace
    assert kept is not None and kept.transaction_id == trace.transaction_id
    # the run is recorded all the same, one row per table, in a completed load
    assert len(record_loads(target, quiet.report.run_id)) == 1
    rows = query(
        warehouse(target),
        f"SELECT count(*) AS n FROM {target.dataset}._sync_runs"
        f" WHERE run_id = '{quiet.report.run_id}' AND status = 'success'",
    )
    assert rows[0]["n"] == len(quiet.report.tables)
    assert quiet.data_version is not None


@pytest.fixture
def lingering_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's thread outlives its stages by `LINGER_S`, as on a busy machine it may while
    it shuts its pools down: the run then ends (its last table finished) with the thread
    alive, whichever way its last group finished (a dlt extract, or none when quiet)."""
    walk_then_linger = WorkspaceWalk._run

    def lingering(self: WorkspaceWalk) -> None:
        walk_then_linger(self)
        time.sleep(LINGER_S)

    monkeypatch.setattr(WorkspaceWalk, "_run", lingering)


def test_a_run_ending_as_its_walk_winds_down_moves_its_delivery_marks(
    tiny_sim: SimulatorHandle, target: Target, lingering_walk: None
) -> None:
    first = sync(target, tiny_sim)
    quiet = sync(target, tiny_sim)

    hooks = query(
        warehouse(target),
        f"SELECT id FROM {target.dataset}.webhooks WHERE _dlt_valid_to IS NULL",
    )
    assert hooks
    for outcome in (first, quiet):
        marked = query(
            warehouse(target),
            f"SELECT webhook_id FROM {target.dataset}._sync_delivery_marks"
            f" WHERE run_id = '{outcome.report.run_id}'",
        )
        assert sorted(row["webhook_id"] for row in marked) == sorted(row["id"] for row in hooks)
    # the first run's marks held: the quiet run stopped at known ground in every log
    written = query(
        warehouse(target),
        f"SELECT rows_seen, rows_new, requests FROM {target.dataset}._sync_runs"
        f" WHERE run_id = '{quiet.report.run_id}' AND resource = 'webhook_deliveries'",
    )
    assert written == [{"rows_seen": 0, "rows_new": 0, "requests": len(hooks)}]


def test_the_turns_file_is_kept_between_steps_and_handed_to_a_waiter(
    tiny_sim: SimulatorHandle, target: Target
) -> None:
    sync(target, tiny_sim)
    database = target.database
    assert database is not None
    file = KeptFile(target.duckdb_file())

    with file.step():
        pass
    # kept after the step: a program that ignores the lock finds the file open
    assert file.is_open and not _opens(database)
    file.release()
    assert not file.is_open and _opens(database)

    with file.step():
        # another process's step waits for the file while this step runs
        waiter = subprocess.Popen(
            [sys.executable, "-c", READ_IN_TURN, str(database)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert wait_until(lambda: lock_wanted(access_lock_path(database)), WAIT_S)
        except BaseException:
            waiter.kill()
            waiter.wait()
            raise
    # the step ended with a waiter: the file was handed over, and the waiter read it
    assert not file.is_open
    out, err = waiter.communicate(timeout=WAIT_S)
    assert waiter.returncode == 0, err[-2000:]
    assert int(out) > 0
    file.release()


def test_a_step_inside_an_outer_holders_lock_keeps_nothing(
    tiny_sim: SimulatorHandle, target: Target
) -> None:
    """A step taken inside the write lock its caller already holds keeps nothing: only the
    outermost holder may let the lock go, so the file keeps nothing open past the step."""
    sync(target, tiny_sim)
    database = target.database
    assert database is not None
    file = KeptFile(target.duckdb_file())
    with target.write_lock():
        with file.step():
            pass
        assert not file.is_open
    # the outer holder let go: nothing of this process holds the file or its lock
    assert not holds_lock(access_lock_path(database)) and _opens(database)
