"""As-of and what-changed, end to end, against the simulator's own history.

A tiny workspace is synced, churned (projects and jobs updated and deleted, a job type
created) and synced again, three times. After each sync the test notes the time and lists the
API: that capture is what the workspace was at that moment. Then `<table>_as_of(moment)` must
return exactly the capture, for every history table, and `<table>_changed(a, b)` exactly the
difference of the two captures (new ids, retired ids, and per changed id the fields that
differ). A moment taken after a churn but before its sync returns the previous capture: as-of
means what the sync had seen by then (the load times, docs/as-of.md), not the API's `updated`.

Checked on DuckDB (the warehouse and the BI snapshot) and on PostgreSQL, through the functions
the dbt build creates, and through the dbt macros `as_of`/`changed_between` given a raw table.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.publish.dbt_build import (
    dbt_args,
    dbt_environment,
    dbt_target,
    profile_env,
)
from drone_ops_sync.pipelines.publish.snapshot import publish_snapshot
from drone_ops_sync.pipelines.run.door import release_dbt_duckdb
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import SimulatorHandle
from tests.pipelines.as_of_check import (
    HISTORY,
    Capture,
    as_of_problems,
    build_history_marts,
    changed_problems,
    changed_rows,
    expected_changes,
    literal,
)
from tests.pipelines.warehouse_check import Warehouse, api_snapshot, query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROUNDS = 3


@dataclass(frozen=True)
class Moment:
    at: datetime
    api: Capture


@dataclass(frozen=True)
class History:
    before_first_sync: datetime
    synced: list[Moment]
    """Right after each sync: the API then and the warehouse agree."""
    unsynced: list[Moment]
    """After a churn, before its sync, with the capture of the sync before."""


def _capture(handle: SimulatorHandle) -> Capture:
    api = api_snapshot(handle.base_url, handle.read_key)
    return {table: api[table] for table in HISTORY}


def _churned_history(handle: SimulatorHandle, target: Target) -> History:
    config = read_source_config({"base_url": handle.base_url, "api_key": handle.read_key})

    def sync() -> Moment:
        outcome = run_sync(target, config=config)
        assert outcome.ok, outcome.load_error
        return Moment(datetime.now(UTC), _capture(handle))

    before = datetime.now(UTC)
    synced = [sync()]
    unsynced = []
    for round_number in range(1, ROUNDS + 1):
        handle.churn(seed=round_number, update_fraction=0.3, delete_fraction=0.05)
        # churn creates nothing: a new entity in the middle of the history, too
        with handle.client(full=True) as client:
            client.post("/v1/job-types", json={"name": f"Round {round_number}"}).raise_for_status()
        unsynced.append(Moment(datetime.now(UTC), synced[-1].api))
        synced.append(sync())
    # the churn changed something every round, so the comparisons below are not vacuous
    for earlier, later in itertools.pairwise(synced):
        assert earlier.api != later.api
    return History(before, synced, unsynced)


def _check_functions(warehouse: Warehouse, marts: str, history: History) -> None:
    """Every `<table>_as_of` and `<table>_changed` against the captures."""

    def rows_of(sql: str) -> list[dict[str, Any]]:
        return query(warehouse, sql)

    for table in HISTORY:
        before = literal(history.before_first_sync)
        assert query(warehouse, f"select * from {marts}.{table}_as_of({before})") == [], table
        for moment in [*history.synced, *history.unsynced]:
            problems = as_of_problems(rows_of, marts, table, literal(moment.at), moment.api[table])
            assert problems == [], (table, moment.at, problems)
        moments = [Moment(history.before_first_sync, {t: {} for t in HISTORY}), *history.synced]
        for i, earlier in enumerate(moments):
            for later in moments[i + 1 :]:
                problems = changed_problems(
                    rows_of,
                    marts,
                    table,
                    (earlier.at, later.at),
                    (earlier.api[table], later.api[table]),
                )
                assert problems == [], problems


def _check_dbt_macros(
    warehouse: Warehouse, target: Target, tmp_path: Path, history: History
) -> None:
    """The dbt macros given a raw table's name (raw columns, dlt's validity): compiled once
    with placeholders by `dbt compile --inline`, then run with the moments put in."""
    from dbt.cli.main import dbtRunner

    inline = (
        "select 'as_of' as call, id, null as change, null as changed_columns"
        " from ({{ as_of('jobs', '__AT__') }}) as a union all"
        " select 'changed', id, change, changed_columns"
        " from ({{ changed_between('jobs', '__FROM__', '__TO__') }}) as c"
    )
    dbt = dbt_target(target)
    # the build's target folder: dbt parses only what changed since
    args = [*dbt_args("compile", tmp_path / "dbt"), "--target", dbt.name]
    with dbt_environment(profile_env(dbt, target.dataset)):
        try:
            outcome = dbtRunner().invoke([*args, "--inline", inline])
        finally:
            if dbt.name == "duckdb":
                release_dbt_duckdb()
    assert outcome.success, outcome.exception
    result: Any = outcome.result
    compiled = str(result.results[0].node.compiled_code)
    first, last = history.synced[0], history.synced[-1]
    sql = (
        compiled.replace("__AT__", literal(first.at))
        .replace("__FROM__", literal(first.at))
        .replace("__TO__", literal(last.at))
    )
    rows = query(warehouse, sql)
    assert {r["id"] for r in rows if r["call"] == "as_of"} == set(first.api["jobs"])
    changed = changed_rows([r for r in rows if r["call"] == "changed"], "id")
    # raw columns: the API's own names, but the creator's id column
    raw_names = {"created_by": "created_by_id"}
    assert changed == expected_changes(first.api["jobs"], last.api["jobs"], raw_names)


def test_as_of_and_changed_agree_with_the_simulators_history(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    history = _churned_history(tiny_sim, any_target)
    build_history_marts(any_target, tmp_path / "dbt")
    marts = f"{any_target.dataset}_marts"
    if any_target.destination == "postgres":
        warehouse: Warehouse = request.getfixturevalue("postgres_dsn")
        _check_functions(warehouse, marts, history)
        _check_dbt_macros(warehouse, any_target, tmp_path, history)
        return
    assert any_target.database is not None
    _check_functions(any_target.database, marts, history)
    _check_dbt_macros(any_target.database, any_target, tmp_path, history)
    # the BI snapshot carries the versions marts and the functions, and answers alike
    snapshot = tmp_path / "warehouse_bi.duckdb"
    publish_snapshot(any_target.database, any_target.dataset, snapshot, include_raw=False)
    _check_functions(snapshot, marts, history)
