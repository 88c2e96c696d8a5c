"""dlt's completed load packages stay bounded however many runs a schedule makes.

dlt keeps every package it loaded in `load/loaded/`; before the pruning, each quiet run added
about 9 files and 62 KB there, forever. Here a tiny workspace is synced eight times (one run
with changes among them): the folder must hold no more than `KEEP_LOADED_PACKAGES` packages,
the newest of them the warehouse's last load, readable by dlt as the CLI reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dlt
import duckdb
import pytest

from drone_ops_sync.pipelines.run.loaded_packages import KEEP_LOADED_PACKAGES
from drone_ops_sync.pipelines.run.target import Target

from .conftest import SyncFn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNS = 8


def _loaded(target: Target) -> list[Path]:
    folder = target.resolved_pipelines_dir() / target.pipeline_name() / "load" / "loaded"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _size(folders: list[Path]) -> int:
    return sum(f.stat().st_size for folder in folders for f in folder.rglob("*") if f.is_file())


def test_completed_packages_stay_bounded_over_runs(
    tiny_sim: Any, target: Target, sync: Any
) -> None:
    run: SyncFn = sync(tiny_sim)
    counts: list[int] = []
    for number in range(RUNS):
        if number == 3:
            tiny_sim.churn(seed=3, update_fraction=0.1, new_deliveries_per_webhook=2)
        assert run().ok
        counts.append(len(_loaded(target)))

    assert max(counts) <= KEEP_LOADED_PACKAGES, counts
    assert counts[-1] == KEEP_LOADED_PACKAGES, counts
    kept = _loaded(target)
    # the last run's data is what stays: its load is the warehouse's newest dlt load (the
    # records of the runs after the first are written by SQL and have no package)
    with duckdb.connect(str(target.resolved_database()), read_only=True) as connection:
        [(newest,)] = connection.sql(
            "SELECT max(load_id) FROM drone_ops._dlt_loads"
            " WHERE load_id NOT IN (SELECT _dlt_load_id FROM drone_ops._sync_runs)"
        ).fetchall()
    assert kept[-1].name == newest
    pipeline = dlt.attach(
        target.pipeline_name(), pipelines_dir=str(target.resolved_pipelines_dir())
    )
    info = pipeline.get_load_package_info(kept[-1].name)
    assert info.state == "loaded" and info.jobs["completed_jobs"]
    assert _size(kept) < 1_000_000


def test_what_dlt_reports_agrees_after_a_quiet_run(
    tiny_sim: Any, target: Target, sync: Any
) -> None:
    """After pruning and a run with changes, every load package the saved trace names (what
    `dlt pipeline <name> show` lists) is one dlt can open (`load-package <id>`), in the state
    the trace gives it; a quiet run (which asks dlt for nothing, its record written by SQL)
    saves no trace, so the trace of the run with changes stays, every package it names still
    there, and nothing is said to be pending. A quiet run's trace used to list two
    `extracted` packages ("pending to normalize") that no longer existed."""
    run: SyncFn = sync(tiny_sim)
    for _ in range(3):
        assert run().ok
    tiny_sim.churn(seed=5, update_fraction=0.1, new_deliveries_per_webhook=2)
    assert run().ok
    states = _traced_states(target)
    assert states, "the trace names the run's packages"
    pipeline = _attached(target)
    pending = set(pipeline.list_extracted_load_packages()) | set(
        pipeline.list_normalized_load_packages()
    )
    completed = set(pipeline.list_completed_load_packages())
    for load_id, state in states.items():
        info = pipeline.get_load_package_info(load_id)
        assert info.state == state, (load_id, info.state, state)
        assert load_id in (pending if state in ("extracted", "normalized") else completed)

    assert run().ok
    assert _traced_states(target) == states, "a quiet run makes no dlt load and saves no trace"
    pipeline = _attached(target)
    assert set(states) <= set(pipeline.list_completed_load_packages()), "pruning kept them"
    assert not pipeline.list_extracted_load_packages()
    assert not pipeline.list_normalized_load_packages()


def _attached(target: Target) -> dlt.Pipeline:
    return dlt.attach(target.pipeline_name(), pipelines_dir=str(target.resolved_pipelines_dir()))


def _traced_states(target: Target) -> dict[str, str]:
    """The load packages the pipeline's saved trace names, with the state it gives each."""
    trace = _attached(target).last_trace
    assert trace is not None
    states: dict[str, str] = {}
    for step in trace.steps:
        for package in getattr(step.step_info, "load_packages", None) or []:
            states[package.load_id] = package.state
    return states
