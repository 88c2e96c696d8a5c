"""kill -9 of a sync in a child process, at seeded points of the second load package
(webhooks, deliveries, users: extracted while the first one loads) and of the run record:
first on a fresh warehouse (the record is a dlt load), then, after churn, on the incremental
one (the record is a SQL transaction once the second package is loaded). Each kill is
followed by a clean run and the truth check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import Zygote
from .harness import Warehouse
from .killing import churn, kill_and_heal, seeded_points
from .results import ChaosResults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LISTS, WEBHOOKS, RECORD = 0, 1, 2
FRESH = seeded_points(
    21,
    [
        ("wal", LISTS),
        ("extract", WEBHOOKS),
        ("normalized", WEBHOOKS),
        ("load-mid", WEBHOOKS),
        ("load-mid", RECORD),
    ],
)
INCREMENTAL = seeded_points(
    22,
    [
        ("extract", WEBHOOKS),
        ("normalize", WEBHOOKS),
        ("load-started", WEBHOOKS),
        ("loaded", WEBHOOKS),
        ("record", WEBHOOKS),
    ],
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=702, scale="small", admin=True, latency_ms="1-4") as handle:
        yield handle


@pytest.mark.parametrize("pair", range(len(FRESH)), ids=[p.name for p in FRESH])
def test_kill9_fresh_then_incremental(
    pair: int,
    sim: SimulatorHandle,
    zygote: Zygote,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    warehouse = Warehouse(tmp_path)
    kill_and_heal(warehouse, sim, FRESH[pair], chaos_results, label="fresh", zygote=zygote)
    churn(sim, seed=800 + pair)
    kill_and_heal(
        warehouse, sim, INCREMENTAL[pair], chaos_results, label="incremental", zygote=zygote
    )
