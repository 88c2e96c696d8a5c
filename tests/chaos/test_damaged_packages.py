"""Damaged dlt packages planted in the pipeline folder, as a kill -9 at the wrong moment (or
a full disk) leaves them: a normalized package holding only `schema_updates.json`, a package
half-moved into `load/new`, an extracted package with a truncated file. The next runs must
never be wedged, never crash with a raw error, and never report success for data they did not
load; within two runs the warehouse equals the API."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import Zygote
from .harness import Warehouse, failed_tables
from .killing import churn, seeded_points
from .results import ChaosResults
from .watch import STAGE_DIRS, signal_at, working_folder

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LISTS = 0


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=1101, scale="small", admin=True, latency_ms="1-4") as handle:
        yield handle


def package_dirs(warehouse: Warehouse, stage: str) -> list[Path]:
    folder = working_folder(warehouse.pipelines_dir) / STAGE_DIRS[stage]
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def only_schema_updates(warehouse: Warehouse) -> str:
    """Strips a normalized package down to its `schema_updates.json`."""
    package = package_dirs(warehouse, "normalized")[0]
    for entry in package.iterdir():
        if entry.name == "schema_updates.json":
            continue
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    assert [p.name for p in package.iterdir()] == ["schema_updates.json"]
    return f"normalized/{package.name}: only schema_updates.json"


def half_moved_into_new(warehouse: Warehouse) -> str:
    """Moves half the job files of an extracted package into a package of the same load id in
    `load/new`, with its state file, as a normalize killed mid-move could leave it."""
    extracted = package_dirs(warehouse, "extracted")[0]
    target = working_folder(warehouse.pipelines_dir) / STAGE_DIRS["new"] / extracted.name
    (target / "new_jobs").mkdir(parents=True, exist_ok=True)
    for name in ("load_package_state.json",):
        if (extracted / name).exists():
            shutil.copy2(extracted / name, target / name)
    jobs = sorted((extracted / "new_jobs").iterdir())
    for job in jobs[: max(1, len(jobs) // 2)]:
        job.rename(target / "new_jobs" / job.name)
    return f"new/{extracted.name}: {max(1, len(jobs) // 2)} of {len(jobs)} job files"


def truncated_file(warehouse: Warehouse) -> str:
    """Cuts the largest file of an extracted package to half its size."""
    extracted = package_dirs(warehouse, "extracted")[0]
    biggest = max((extracted / "new_jobs").iterdir(), key=lambda p: p.stat().st_size)
    data = biggest.read_bytes()
    biggest.write_bytes(data[: len(data) // 2])
    return f"extracted/{extracted.name}: {biggest.name} cut to {len(data) // 2} bytes"


DAMAGE: dict[str, tuple[str, Callable[[Warehouse], str]]] = {
    "schema-updates-only": ("normalized", only_schema_updates),
    "half-moved-into-new": ("extract", half_moved_into_new),
    "truncated-extracted-file": ("extract", truncated_file),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_package_never_wedges_nor_claims_unloaded_data(
    case: str,
    sim: SimulatorHandle,
    zygote: Zygote,
    tmp_path: Path,
    chaos_results: ChaosResults,
) -> None:
    stage, damage = DAMAGE[case]
    warehouse = Warehouse(tmp_path)
    assert warehouse.run(sim.base_url, sim.read_key).ok
    churn(sim, seed=len(case))
    # a real package of the run, left where a kill -9 stops it
    child = warehouse.child(sim.base_url, sim.read_key, name="killed", zygote=zygote)
    try:
        point = seeded_points(51, [(stage, LISTS)])[0]
        record = signal_at(
            child,
            point,
            pipelines_dir=warehouse.pipelines_dir,
            database=warehouse.database,
            sig=signal.SIGKILL,
        )
        child.wait(10)
    finally:
        child.stop()
    assert record.hit, record.seen
    planted = damage(warehouse)
    outcomes: list[SyncOutcome | str] = []
    for _ in range(2):
        try:
            outcome = warehouse.run(sim.base_url, sim.read_key)
        except Exception as exc:  # recorded: a raw error is what this case guards against
            outcomes.append(f"raised {type(exc).__name__}: {exc}")
            continue
        outcomes.append(outcome)
        if outcome.ok:
            break
    final = outcomes[-1]
    ok = not isinstance(final, str) and final.ok
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind=f"damaged-package:{case}",
        run_ok=ok,
        note=f"{planted}; " + "; ".join(str(o)[:150] for o in outcomes if isinstance(o, str)),
    )
    raised = [o for o in outcomes if isinstance(o, str)]
    assert not raised, raised
    assert ok, [failed_tables(o) for o in outcomes if isinstance(o, SyncOutcome)]
