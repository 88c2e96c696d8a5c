"""Server errors from the simulator's own fault switch (admin API): 503 at 5%, 20% and 50% of
GETs, 500 and 502 at 20% (the client treats every 5xx alike; the mixed case of
test_http_faults_body.py has all three at every rate). Below 50% every run succeeds and equals
the API; at 50% a run may fail and the next clean run heals the warehouse to equality."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .harness import Warehouse, fault_phases
from .results import ChaosResults

pytestmark = [pytest.mark.e2e]

# small, with shorter delivery chains: ~55 requests per run, 3 log pages per webhook
WORKSPACE = ("--projects", "40", "--jobs-per-project", "6", "--logs-per-webhook", "150")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=501, scale="small", admin=True, extra_args=WORKSPACE) as handle:
        yield handle


@pytest.mark.parametrize(
    ("kind", "rates"), [("503", (0.05, 0.20, 0.50)), ("500", (0.20,)), ("502", (0.20,))]
)
def test_server_errors_at_rates(
    kind: str,
    rates: tuple[float, ...],
    sim: SimulatorHandle,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    def switch(rate: float | None) -> None:
        sim.set_faults(None if rate is None else f"{kind}:{rate}")

    fault_phases(
        f"http-{kind}", sim, Warehouse(tmp_path), chaos_results, switch=switch, rates=rates
    )
