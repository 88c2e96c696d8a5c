"""Kill a sync in a child process at a chosen point, heal with a clean run, check the truth.

The points are seeded: walk points after a drawn number of API requests (plus a drawn delay
of a few milliseconds), package points at a stage of one of the run's three load packages
(plus a drawn delay). See watch.py for how a point is recognised from outside.
"""

from __future__ import annotations

import random
import signal
from dataclasses import dataclass

from testkit.simulator_process import SimulatorHandle

from .child import Zygote
from .harness import Warehouse, failed_tables
from .results import ChaosResults
from .watch import KillPoint, KillRecord, package_point, signal_at, walk_point

SIGNAL_NAMES: dict[int, str] = {signal.SIGKILL: "kill-9", signal.SIGINT: "sigint"}
# how long a child may take to stop after SIGINT before it is killed (exit codes of SIGINT
# are not asserted: signal handling is being rewritten)
SIGINT_GRACE_SECONDS = 30.0


def seeded_points(seed: int, specs: list[tuple[str, int] | int]) -> list[KillPoint]:
    """Kill points from specs: an int is a walk point after that many requests, a tuple
    (kind, package index) a package point; each gets a seeded delay of 0-20 ms."""
    rng = random.Random(f"chaos-kill:{seed}")
    points = []
    for spec in specs:
        delay = round(rng.uniform(0.0, 0.02), 3)
        if isinstance(spec, int):
            points.append(walk_point(spec, delay))
        else:
            points.append(package_point(spec[0], spec[1], delay))
    return points


def walk_requests(seed: int, low: int, high: int) -> int:
    return random.Random(f"chaos-walk:{seed}").randint(low, high)


@dataclass
class Healed:
    record: KillRecord
    exit_code: int | None
    stopped_by_kill: bool
    """True when a SIGINT was ignored for too long and the child was killed instead."""


def kill_and_heal(
    warehouse: Warehouse,
    sim: SimulatorHandle,
    point: KillPoint,
    results: ChaosResults,
    *,
    label: str,
    sig: int = signal.SIGKILL,
    zygote: Zygote | None = None,
) -> Healed:
    """Starts a sync in a child, signals it at `point`, then runs a clean sync in this process
    and ends with the truth check (recorded as `<signal>:<phase>`)."""
    child = warehouse.child(sim.base_url, sim.read_key, name=label.replace(" ", "-"), zygote=zygote)
    stopped_by_kill = False
    try:
        record = signal_at(
            child,
            point,
            pipelines_dir=warehouse.pipelines_dir,
            database=warehouse.database,
            requests=lambda: int(sim.stats()["total"]),
            sig=sig,
            poll=0.005 if point.needs_requests else 0.002,
        )
        grace = SIGINT_GRACE_SECONDS if sig == signal.SIGINT else 10.0
        exit_code = child.wait(grace)
        if exit_code is None:
            stopped_by_kill = True
            child.stop()
    finally:
        child.stop()
    healed = warehouse.run(sim.base_url, sim.read_key)
    kind = f"{SIGNAL_NAMES.get(sig, str(sig))}:{point.phase}"
    if not record.hit:
        kind += " (point not reached)"
    note = f"{label} {point.name}: {record.seen}" + (" (SIGINT ignored)" if stopped_by_kill else "")
    warehouse.check(
        sim.base_url, sim.read_key, results=results, kind=kind, run_ok=healed.ok, note=note
    )
    assert healed.ok, f"{note}: the clean run after the kill failed: {failed_tables(healed)}"
    assert record.hit, f"{note}: the run finished before the kill point was reached"
    return Healed(record, exit_code, stopped_by_kill)


def churn(sim: SimulatorHandle, seed: int) -> None:
    """A morning of changes: updates, a deletion or two, new deliveries for every webhook."""
    sim.churn(seed=seed, update_fraction=0.08, delete_fraction=0.02, new_deliveries_per_webhook=4)
