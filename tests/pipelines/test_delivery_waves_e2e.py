"""Deliveries load in waves while the chains still walk (pipelines/run/delivery_waves.py): the
warehouse equals the API afterwards, a chain that fails after waves loaded leaves no gap, and
a warehouse synced before waves gets its marks recorded before any wave runs.

The chains are made to outlast the waves by a condition, not by their length: the logs are
typed in batches of `BATCH` entries (`settings.ARROW_BATCH_ROWS`, replaced here), and a held
chain waits after each of its first batches until a wave has started for it (`HeldChains`),
however fast or busy the machine."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import drone_ops_sync.pipelines.run.sync as sync_module
import drone_ops_sync.sources.drone_ops.run_state as run_state_module
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops import settings
from drone_ops_sync.sources.drone_ops.internal import Seams
from drone_ops_sync.sources.drone_ops.walk.spill import TableSnapshot
from drone_ops_sync.sources.drone_ops.walk.webhooks import WebhookWalker
from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import wait_until
from .conftest import SyncFn
from .test_sync_e2e import assert_equals_api, warehouse_of
from .warehouse_check import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
BATCH = 100
"""Entries per typed batch: two pages of the log."""
WAVES = Seams(delivery_wave_rows=BATCH)
LOGS = 1_000
"""Entries per webhook: ten batches per chain."""
MARKS = "drone_ops._sync_delivery_marks"
HOLD_LIMIT_S = 60.0
"""How long a held chain waits for its wave: a bound for waves that never come."""


class HeldChains:
    """While `held` is open, each webhook's chain waits after its n-th typed batch (n up to
    `waves`) until n waves have started since: the chains are still walking while those waves
    load. A chain whose wave never comes goes on after `HOLD_LIMIT_S`, unheld from then on,
    and the test's count of waves fails."""

    def __init__(self) -> None:
        self.started = 0
        """Waves started (`take_loadable` called) in this test."""
        self.first_wave = threading.Event()
        self._lock = threading.Lock()
        self._waves = 0
        self._base = 0
        self._batches: Counter[str] = Counter()

    def wave_started(self) -> None:
        with self._lock:
            self.started += 1
        self.first_wave.set()

    @contextmanager
    def held(self, waves: int) -> Iterator[None]:
        with self._lock:
            self._waves, self._base = waves, self.started
            self._batches.clear()
        try:
            yield
        finally:
            with self._lock:
                self._waves = 0

    def after_batch(self, webhook_id: str) -> None:
        with self._lock:
            self._batches[webhook_id] += 1
            batch = self._batches[webhook_id]
            needed = self._base + batch if batch <= self._waves else None
        if needed is not None and not wait_until(lambda: self.started >= needed, HOLD_LIMIT_S):
            with self._lock:
                self._waves = 0


@pytest.fixture
def chains(monkeypatch: pytest.MonkeyPatch) -> HeldChains:
    """Batches of `BATCH` entries, each wave noted as it starts, each chain held by `held`."""
    chains = HeldChains()
    take_loadable = TableSnapshot.take_loadable
    spill = WebhookWalker._spill

    def noting_the_wave(self: TableSnapshot, **kwargs: Any) -> Iterator[Any]:
        chains.wave_started()
        yield from take_loadable(self, **kwargs)

    def holding_the_chain(self: WebhookWalker, lines: Any, webhook_id: str) -> Any:
        typed = spill(self, lines, webhook_id)
        chains.after_batch(webhook_id)
        return typed

    monkeypatch.setattr(settings, "ARROW_BATCH_ROWS", BATCH)
    monkeypatch.setattr(TableSnapshot, "take_loadable", noting_the_wave)
    monkeypatch.setattr(WebhookWalker, "_spill", holding_the_chain)
    return chains


@pytest.fixture
def long_logs() -> Iterator[SimulatorHandle]:
    """Two webhooks of `LOGS` entries each, beside the tiny scale's lists."""
    extra = ("--webhooks", "2", "--logs-per-webhook", str(LOGS))
    with running_simulator(seed=7, scale="tiny", extra_args=extra) as handle:
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
    long_logs: SimulatorHandle, sync: Callable[..., SyncFn], target: Target, chains: HeldChains
) -> None:
    run = sync(long_logs)
    with chains.held(waves=2):
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
    long_logs: SimulatorHandle, sync: Callable[..., SyncFn], target: Target, chains: HeldChains
) -> None:
    """Every request fails from the first batch typed after a wave started: the chains fail
    half-way, no mark moves, and the next run loads the rest exactly once."""
    broken = threading.Event()

    def break_the_api(table: str, rows: int) -> None:
        if table == "webhook_deliveries" and chains.first_wave.is_set() and not broken.is_set():
            broken.set()
            long_logs.set_faults("503:1.0")

    run = sync(long_logs, max_attempts=1)
    with chains.held(waves=2):
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
    chains: HeldChains,
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
    with chains.held(waves=1):
        later = run(seams=WAVES)
    assert later.ok and later.delivery_waves >= 1
    seeded = query(warehouse_of(target), f"SELECT webhook_id, newest_ms FROM {MARKS}")
    assert {(r["webhook_id"], r["newest_ms"]) for r in seeded} >= set(before.items()), (
        "the marks read from the deliveries were recorded first"
    )
    assert recorded_marks(target) == newest_per_webhook(assert_equals_api(long_logs, target))
