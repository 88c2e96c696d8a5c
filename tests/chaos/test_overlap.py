"""Two syncs of the same warehouse at once: the second starts at staggered offsets into the
first (walk, extract, load). Neither may hang, crash with a raw error or leave the warehouse
wedged; a run that reports success must have loaded what it reports (if either says ok, the
warehouse equals the API at once, with no repair run); otherwise the next clean run heals."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import Zygote
from .harness import Warehouse, failed_tables
from .killing import churn
from .results import ChaosResults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OFFSETS = (0.0, 0.6, 1.5)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=1001, scale="small", admin=True, latency_ms="1-4") as handle:
        yield handle


@pytest.mark.parametrize("offset", OFFSETS)
def test_overlapping_runs_never_wedge_nor_claim_unloaded_data(
    offset: float,
    sim: SimulatorHandle,
    zygote: Zygote,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    warehouse = Warehouse(tmp_path)
    assert warehouse.run(sim.base_url, sim.read_key).ok
    churn(sim, seed=int(offset * 1000) + 5)
    first = warehouse.child(sim.base_url, sim.read_key, name="first", zygote=zygote)
    time.sleep(offset)
    second = warehouse.child(sim.base_url, sim.read_key, name="second", zygote=zygote)
    try:
        codes = [first.wait(120), second.wait(120)]
    finally:
        first.stop()
        second.stop()
    outcomes = [first.result(), second.result()]
    raw = [
        f"{o['raised']}: {o['message'][:300]}"
        for o in outcomes
        if o is not None and "raised" in o and not o.get("named")
    ]
    claimed = any(o is not None and o.get("ok") for o in outcomes)
    healed = None
    if not claimed:
        healed = warehouse.run(sim.base_url, sim.read_key)
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind=f"overlap@{offset}s",
        run_ok=claimed,
        note=f"codes {codes}; " + "; ".join(str(o)[:200] for o in outcomes),
    )
    assert None not in codes, f"a run hung: {first.output()} {second.output()}"
    assert not raw, f"a run crashed with a raw error: {raw}"
    assert healed is None or healed.ok, failed_tables(healed) if healed else None
