"""A run's record goes through a dlt load on a new warehouse and through one SQL transaction
once dlt has made its tables (`pipelines/run/run_record.py`), on DuckDB and PostgreSQL.

What is checked, from the warehouse and dlt's working folder, not from the code under test:
the first run's `_sync_runs` rows name a load package dlt completed; a run with changes and a
quiet run name a load no package carries, recorded in `_dlt_loads` as a completed load of the
source's schema; the quiet run adds no load package at all (nothing completed, nothing
pending); and the completed-load filter the rolling refresh and the delivery marks rely on
counts every run.
"""

from __future__ import annotations

from typing import Any

import pytest

from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import SimulatorHandle

from .test_events_write import warehouse
from .warehouse_check import query

pytestmark = pytest.mark.e2e

RECORD_TABLES = ("_sync_runs", "_sync_issues", "_sync_delivery_marks")


def sync(target: Target, sim: SimulatorHandle) -> SyncOutcome:
    overrides = {"base_url": sim.base_url, "api_key": sim.read_key}
    outcome = run_sync(target, config=read_source_config(overrides))
    assert outcome.ok, outcome.report.tables
    assert outcome.finished_at is not None, outcome.notes
    return outcome


def record_loads(target: Target, run_id: str) -> set[str]:
    """The load ids of one run's record rows, over the three tables."""
    found: set[str] = set()
    for table in RECORD_TABLES:
        rows = query(
            warehouse(target),
            f"SELECT DISTINCT _dlt_load_id AS id FROM {target.dataset}.{table}"
            f" WHERE run_id = '{run_id}'",
        )
        found.update(str(row["id"]) for row in rows)
    return found


def dlt_loads(target: Target) -> dict[str, dict[str, Any]]:
    rows = query(
        warehouse(target),
        f"SELECT load_id, schema_name, status FROM {target.dataset}._dlt_loads",
    )
    return {str(row["load_id"]): row for row in rows}


def packages(target: Target) -> tuple[set[str], set[str]]:
    """dlt's completed load packages, and those still pending, in the working folder."""
    pipeline = make_pipeline(target)
    pending = set(pipeline.list_extracted_load_packages())
    pending |= set(pipeline.list_normalized_load_packages())
    return set(pipeline.list_completed_load_packages()), pending


def test_the_record_is_a_dlt_load_first_then_sql(
    tiny_sim: SimulatorHandle, any_target: Target
) -> None:
    target = any_target
    first = sync(target, tiny_sim)
    [by_dlt] = record_loads(target, first.report.run_id)
    completed, _ = packages(target)
    assert by_dlt in completed, "a new warehouse's record is a dlt load"

    with tiny_sim.client(full=True) as client:
        project = client.get("/v1/projects").json()["projects"][0]
        patched = client.patch(f"/v1/projects/{project['id']}", json={"name": "Renamed"})
        assert patched.status_code == 200, patched.text
    tiny_sim.wait_for_deliveries()
    changed = sync(target, tiny_sim)
    assert changed.report.table("projects").changed == 1
    [by_sql] = record_loads(target, changed.report.run_id)
    completed, pending = packages(target)
    assert by_sql not in completed | pending, "written by SQL: no package of dlt's carries it"
    assert completed, "the change itself is a dlt load"
    loads = dlt_loads(target)
    assert loads[by_sql]["status"] == 0 and loads[by_sql]["schema_name"] == "drone_ops"

    before_packages, before_loads = completed, set(loads)
    quiet = sync(target, tiny_sim)
    completed, pending = packages(target)
    assert completed <= before_packages and not pending, "a quiet run makes no dlt load"
    [quiet_load] = record_loads(target, quiet.report.run_id)
    assert set(dlt_loads(target)) - before_loads == {quiet_load}

    # what the rolling refresh counts: `jobs` successes whose load completed, every run's
    [counted] = query(
        warehouse(target),
        f"SELECT count(*) AS n FROM {target.dataset}._sync_runs r"
        f" JOIN {target.dataset}._dlt_loads l ON l.load_id = r._dlt_load_id"
        " WHERE l.status = 0 AND r.resource = 'jobs' AND r.status = 'success'",
    )
    assert counted["n"] == 3
    runs = query(
        warehouse(target),
        f"SELECT count(*) AS n FROM {target.dataset}._sync_runs"
        f" WHERE run_id = '{quiet.report.run_id}'",
    )
    assert runs[0]["n"] == len(quiet.report.tables)
