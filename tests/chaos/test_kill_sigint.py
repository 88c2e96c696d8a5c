"""SIGINT (Ctrl-C) to a sync in a child process at kill points across walk, extract, normalize
and load, on a fresh and then an incremental warehouse; the next clean run must heal the
warehouse to equality. The child calls `run_sync` as a library user would, without the CLI's
handler, so SIGINT lands as a KeyboardInterrupt wherever the run is; the CLI's cooperative stop
and its exit codes 130/143 are asserted in tests/pipelines/test_unattended.py. A child that
ignores SIGINT for 30 s is killed and noted in the results."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import Zygote
from .harness import Warehouse
from .killing import churn, kill_and_heal, seeded_points, walk_requests
from .results import ChaosResults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LISTS, WEBHOOKS = 0, 1
FRESH = seeded_points(
    31, [walk_requests(4, 2, 30), ("extract", WEBHOOKS), ("normalize", LISTS), ("wal", WEBHOOKS)]
)
INCREMENTAL = seeded_points(
    32,
    [("load-mid", LISTS), ("record", WEBHOOKS), ("normalized", WEBHOOKS), walk_requests(5, 2, 30)],
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=703, scale="small", admin=True, latency_ms="1-4") as handle:
        yield handle


@pytest.mark.parametrize("pair", range(len(FRESH)), ids=[p.name for p in FRESH])
def test_sigint_fresh_then_incremental(
    pair: int,
    sim: SimulatorHandle,
    zygote: Zygote,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    warehouse = Warehouse(tmp_path)
    kill_and_heal(
        warehouse,
        sim,
        FRESH[pair],
        chaos_results,
        label="fresh",
        sig=signal.SIGINT,
        zygote=zygote,
    )
    churn(sim, seed=900 + pair)
    kill_and_heal(
        warehouse,
        sim,
        INCREMENTAL[pair],
        chaos_results,
        label="incremental",
        sig=signal.SIGINT,
        zygote=zygote,
    )
