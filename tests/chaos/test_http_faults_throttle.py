"""429s (Retry-After in seconds) and connections reset in the middle of a body, switched on
through the simulator's admin API for one run each, at 5%, 20% and 50% of GETs. Below 50%
every run succeeds and equals the API; at 50% a run may fail and the next clean run heals.

The simulator's 429 always says `Retry-After: 1` (seconds); an HTTP-date Retry-After comes
from the chaos proxy in test_http_faults_proxy.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .harness import Warehouse, fault_phases
from .results import ChaosResults

pytestmark = [pytest.mark.e2e]

WORKSPACE = ("--projects", "40", "--jobs-per-project", "6", "--logs-per-webhook", "150")
# every 429 pauses the whole walk for its Retry-After (1 s): fewer requests keep it short
THROTTLED_WORKSPACE = ("--projects", "12", "--jobs-per-project", "6", "--logs-per-webhook", "100")


def test_429_retry_after_seconds_at_rates(tmp_path: Path, chaos_results: ChaosResults) -> None:
    with running_simulator(
        seed=503, scale="small", admin=True, extra_args=THROTTLED_WORKSPACE
    ) as sim:

        def switch(rate: float | None) -> None:
            sim.set_faults(None if rate is None else f"429:{rate}")

        fault_phases("http-429", sim, Warehouse(tmp_path), chaos_results, switch=switch)


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=502, scale="small", admin=True, extra_args=WORKSPACE) as handle:
        yield handle


def test_reset_mid_body_at_rates(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    def switch(rate: float | None) -> None:
        sim.set_faults(None if rate is None else f"reset:{rate}")

    fault_phases("http-reset", sim, Warehouse(tmp_path), chaos_results, switch=switch)
