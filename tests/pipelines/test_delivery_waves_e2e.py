"""Deliveries load in waves while the chains still walk (pipelines/run/delivery_waves.py): the
warehouse equals the API afterwards, a chain that fails after waves loaded leaves no gap, and
a warehouse synced before waves gets its marks recorded before any wave runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import drone_ops_sync.pipelines.run.sync as sync_module
import drone_ops_sync.sources.drone_ops.run_state as run_state_module
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops.internal import Seams
from drone_ops_sync.sources.drone_ops.walk.spill import TableSnapshot
from testkit.simulator_process import SimulatorHandle, running_simulator

from .conftest import SyncFn
from .test_sync_e2e import assert_equals_api, warehouse_of
from .warehouse_check import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
WAVES = Seams(delivery_wave_rows=500)
LOGS = 24_000
MARKS = "drone_ops._sync_delivery_marks"


@pytest.fixture
def long_logs() -> Iterator[SimulatorHandle]:
    """Two webhooks with 480 log pages each at 10 ms a page: the list tables are loaded long
    before the chains end, and each chain types a batch every 5,000 entries (four each before
    the last), so the deliveries load in waves meanwhile even when a busy machine holds the
    waves back during the lists (with 240 pages, a suite run on 2 shared cores once saw the
    chains end after a single wave)."""
    with running_simulator(
        seed=7, scale="small", latency_ms=10, extra_args=("--logs-per-webhook", str(LOGS))
    ) as handle:
        yield handle


def recorded_marks(target: Target) -> dict[str, int]:
    rows = query(
        warehouse_of(target), f"SELECT webhook_id, max(newest_ms) AS ms FROM {MARKS} GROUP BY 1"
    )
    return {row["webhook_id"]: row["ms"] for row in rows}


def newest_per_webhook(api: dict[str, dict[str, dict[str, Any]]]) -> dict[str, int]:
    newest: dict[str, int] = {}
    for entry in api["webhook_deliveries"].values():
        hook = entry["webhook_id"]
        newest[hook] = max(newest.get(hook, 0), entry["created"])
    return newest


def test_deliveries_load_in_waves_and_the_warehouse_equals_the_api(
    long_logs: SimulatorHandle, sync: Callable[..., SyncFn], target: Target
) -> None:
    run = sync(long_logs)
    first = run(seams=WAVES)
    assert first.ok, first.report.tables
    assert first.delivery_waves >= 2, "the deliveries loaded while the chains walked"
    api = assert_equals_api(long_logs, target)
    assert recorded_marks(target) == newest_per_webhook(api)

    long_logs.churn(seed=3, new_deliveries_per_webhook=40)
    again = run(seams=WAVES)
    assert again.ok and again.report.tables["webhook_deliveries"].new == 80
    assert recorded_marks(target) == newest_per_webhook(assert_equals_api(long_logs, target))


def test_a_chain_failing_after_waves_loaded_leaves_no_gap(
    long_logs: SimulatorHandle,
    sync: Callable[..., SyncFn],
    target: Target,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every request fails from the first batch typed after a wave started: the chains fail
    half-way, no mark moves, and the next run loads the rest exactly once."""
    waved = threading.Event()
    broken = threading.Event()
    take_loadable = TableSnapshot.take_loadable

    def noting_the_wave(self: TableSnapshot, **kwargs: Any) -> Iterator[Any]:
        waved.set()
        yield from take_loadable(self, **kwargs)

    def break_the_api(table: str, rows: int) -> None:
        if table == "webhook_deliveries" and waved.is_set() and not broken.is_set():
            broken.set()
            long_logs.set_faults("503:1.0")

    monkeypatch.setattr(TableSnapshot, "take_loadable", noting_the_wave)

    run = sync(long_logs, max_attempts=1)
    failed = run(seams=WAVES, progress=break_the_api)
    assert broken.is_set() and failed.delivery_waves >= 1
    assert failed.report.tables["webhook_deliveries"].status == "failed"
    loaded = query(warehouse_of(target), "SELECT count(*) AS n FROM drone_ops.webhook_deliveries")
    assert 0 < loaded[0]["n"] < 2 * LOGS, "the waves loaded part of the logs"
    assert recorded_marks(target) == {}, "a failed chain moves no mark"

    long_logs.set_faults(None)
    repaired = run(seams=WAVES)
    assert repaired.ok, repaired.report.tables
    api = assert_equals_api(long_logs, target)
    assert len(api["webhook_deliveries"]) == 2 * LOGS
    assert recorded_marks(target) == newest_per_webhook(api)


def test_a_warehouse_synced_before_waves_gets_its_marks_before_any_wave(
    long_logs: SimulatorHandle,
    sync: Callable[..., SyncFn],
    target: Target,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A warehouse synced by a version without waves has no `_sync_delivery_marks`: its marks
    are read from its deliveries and recorded before anything is loaded."""
    run = sync(long_logs)
    with monkeypatch.context() as older_version:
        older_version.setattr(sync_module, "record_marks_first", lambda *args: None)
        # the run records no marks: not even the table is created
        older_version.setattr(run_state_module, "_mark_items", lambda *args: iter(()))
        assert run().ok
    tables = query(warehouse_of(target), "SELECT table_name FROM information_schema.tables")
    assert "_sync_delivery_marks" not in {row["table_name"] for row in tables}
    before = newest_per_webhook(assert_equals_api(long_logs, target))

    long_logs.churn(seed=4, new_deliveries_per_webhook=LOGS)
    later = run(seams=WAVES)
    assert later.ok and later.delivery_waves >= 1
    seeded = query(warehouse_of(target), f"SELECT webhook_id, newest_ms FROM {MARKS}")
    assert {(r["webhook_id"], r["newest_ms"]) for r in seeded} >= set(before.items()), (
        "the marks read from the deliveries were recorded first"
    )
    assert recorded_marks(target) == newest_per_webhook(assert_equals_api(long_logs, target))
