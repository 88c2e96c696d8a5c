"""After a kill -9, the next run leaves no walk spill folder (`drone-ops-walk-*`) and no dbt
scratch folder (`drone-ops-dbt-*`) behind: not in the system temp dir (each child here has its
own TMPDIR, so what it leaves is visible and belongs to this test), nor beside the pipeline
folder. The model build is killed through the CLI (`drone-sync run` builds the models)."""

from __future__ import annotations

import fnmatch
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import SimulatorHandle, running_simulator

from .child import SyncChild, Zygote
from .harness import CALM, Warehouse
from .results import ChaosResults
from .truth import assert_warehouse_matches_api

pytestmark = [pytest.mark.e2e]

SPILL = "drone-ops-walk-*"
SCRATCH = "drone-ops-dbt-*"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=704, scale="small", admin=True, latency_ms="1-4") as handle:
        yield handle


def leftovers(*roots: Path, patterns: tuple[str, ...] = (SPILL, SCRATCH)) -> list[str]:
    """Folders named like a spill or scratch folder under `roots` (a walk that tolerates
    folders moved or removed under it by a running sync)."""
    found: set[str] = set()
    for root in roots:
        for folder, names, _ in os.walk(root, onerror=lambda _: None):
            found.update(
                os.path.join(folder, name)
                for name in names
                if any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
            )
    return sorted(found)


def spilled_files(*roots: Path) -> bool:
    """Whether a spill folder under `roots` holds a file yet."""
    for path in leftovers(*roots, patterns=(SPILL,)):
        try:
            if os.listdir(path):
                return True
        except OSError:
            continue
    return False


def wait_for(child: SyncChild, found: Callable[[], bool], timeout: float = 300.0) -> bool:
    deadline = time.monotonic() + timeout
    while child.alive() and time.monotonic() < deadline:
        if found():
            return True
        time.sleep(0.002)
    return False


def test_kill9_in_the_walk_leaves_no_spill_after_the_next_run(
    sim: SimulatorHandle, zygote: Zygote, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    warehouse = Warehouse(tmp_path)
    assert warehouse.run(sim.base_url, sim.read_key).ok
    sim.churn(seed=41, update_fraction=0.1, delete_fraction=0.0, new_deliveries_per_webhook=5)
    child = warehouse.child(sim.base_url, sim.read_key, name="killed", zygote=zygote)
    try:
        # killed once the walk has spilled its first batch to disk
        spilled = wait_for(child, lambda: spilled_files(child.tmpdir, tmp_path))
        hit = child.send(signal.SIGKILL)
        child.wait(10)
    finally:
        child.stop()
    assert spilled and hit, "the child was killed while its walk spill existed"
    left_by_kill = leftovers(child.tmpdir, tmp_path)
    following = warehouse.child(sim.base_url, sim.read_key, name="next", zygote=zygote)
    assert following.wait(120) == 0, following.output()
    result = following.result()
    assert result is not None and result.get("ok"), result
    remaining = leftovers(child.tmpdir, tmp_path)
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind="kill-9:walk (spill)",
        run_ok=True,
        note=f"left by the kill: {left_by_kill}; after the next run: {remaining}",
    )
    assert left_by_kill, "the kill left its spill folder (else this case tests nothing)"
    assert not remaining, f"spill folders left after the next run: {remaining}"


def _cli_pipelines_dir(database: Path) -> Path:
    target = Target(database=database)
    resolved = getattr(target, "resolved_pipelines_dir", None)
    found = resolved() if callable(resolved) else None
    return Path(found) if found is not None else database.parent / ".dlt_pipelines"


@pytest.mark.slow
def test_kill9_in_the_model_build_leaves_no_scratch_after_the_next_run(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    database = tmp_path / "warehouse.duckdb"
    env = {
        "SOURCES__DRONE_OPS__BASE_URL": sim.base_url,
        "SOURCES__DRONE_OPS__API_KEY": sim.read_key,
    }
    work = tmp_path / "cli"
    child = SyncChild(
        work,
        argv=["drone_ops_sync.pipelines.cli", "run", "--database", str(database)],
        env=env,
        name="models",
    )
    delay = random.Random("chaos-models").uniform(1.0, 3.0)
    try:
        building = wait_for(
            child, lambda: bool(leftovers(tmp_path, patterns=(SCRATCH,))), timeout=600
        )
        time.sleep(delay)
        hit = child.send(signal.SIGKILL)
        child.wait(10)
    finally:
        child.stop()
    assert building and hit, f"the model build was reached and killed: {child.output()}"
    left_by_kill = leftovers(child.tmpdir, tmp_path)
    following = SyncChild(
        work,
        argv=["drone_ops_sync.pipelines.cli", "run", "--no-models", "--database", str(database)],
        env=env,
        name="next",
    )
    assert following.wait(120) == 0, following.output()
    remaining = leftovers(child.tmpdir, tmp_path)
    assert_warehouse_matches_api(
        database,
        "drone_ops",
        sim.base_url,
        sim.read_key,
        pipelines_dir=_cli_pipelines_dir(database),
        overrides=CALM,
        results=chaos_results,
        kind="kill-9:models",
        run_ok=True,
        note=f"left by the kill: {left_by_kill}; after the next run: {remaining}",
    )
    assert left_by_kill, "the kill left the dbt scratch folder (else this case tests nothing)"
    assert not remaining, f"scratch folders left after the next run: {remaining}"
