"""Truncated bodies and all six simulator fault kinds mixed (429, 500, 502, 503, reset,
truncate), at 5%, 20% and 50% of GETs for one run each. Below 50% every run succeeds and
equals the API; at 50% a run may fail and the next clean run heals.

These go through `KeyedFaults` (the simulator's kinds and shapes, decided per request rather
than from one shared random stream consumed in thread order): each case replays the same
faults on the same requests every time, so it passes or fails the same way on every run. That
matters for truncation, whose retry policy has differed from the other kinds' (a body that is
not JSON at all is retried only briefly)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .fault_server import FaultServer, KeyedFaults
from .harness import Warehouse, fault_phases
from .results import ChaosResults

pytestmark = [pytest.mark.e2e]

WORKSPACE = ("--projects", "40", "--jobs-per-project", "6", "--logs-per-webhook", "150")
SIMULATOR_KINDS = ("429", "500", "502", "503", "reset", "truncate")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=502, scale="small", admin=True, extra_args=WORKSPACE) as handle:
        yield handle


def _mixed(rate: float) -> str:
    share = rate / len(SIMULATOR_KINDS)
    return ",".join(f"{kind}:{share:.4f}" for kind in SIMULATOR_KINDS)


@pytest.mark.parametrize("kind", ["truncate", "mixed"])
def test_keyed_truncation_and_mixed_at_rates(
    kind: str, sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    faults = KeyedFaults(sim.base_url, seed=7)
    with FaultServer(faults) as proxy:

        def switch(rate: float | None) -> None:
            if rate is None:
                faults.set(None)
            else:
                faults.set(_mixed(rate) if kind == "mixed" else f"{kind}:{rate}")

        try:
            fault_phases(
                f"http-{kind}",
                sim,
                Warehouse(tmp_path),
                chaos_results,
                switch=switch,
                sync_url=proxy.base_url,
            )
        finally:
            faults.close()
