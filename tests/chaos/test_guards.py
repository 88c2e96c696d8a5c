"""Guards and bookkeeping: the mass-deletion guard and its override, `_sync_runs` and
`_sync_issues` from the first run on, and failure messages that name the table, the endpoint
and the cause (in the run's report and in `_sync_runs.error`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from testkit.simulator_process import SimulatorHandle, running_simulator

from .bad_data import KEY, failure_message_problems
from .fault_server import FaultServer, Reply, Request, Workspace
from .harness import Warehouse, failed_tables
from .results import ChaosResults
from .truth import Reader

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=801, scale="tiny", admin=True) as handle:
        yield handle


def table_rows(warehouse: Warehouse, table: str) -> list[dict[str, Any]]:
    with Reader(warehouse.database, warehouse.dataset) as reader:
        return reader.rows(f'SELECT * FROM "{warehouse.dataset}"."{table}" ORDER BY "_dlt_id"')


def test_mass_deletion_is_refused_untouched_then_allowed(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    warehouse = Warehouse(tmp_path)
    assert warehouse.run(sim.base_url, sim.read_key).ok
    with Reader(warehouse.database, warehouse.dataset) as reader:
        projects = sorted(row["id"] for row in reader.current_rows("projects"))
    doomed = projects[: len(projects) // 2 + 1]
    with sim.client(full=True) as client:
        for project_id in doomed:
            assert client.delete(f"/v1/projects/{project_id}").status_code == 204
    before = {table: table_rows(warehouse, table) for table in ("projects", "jobs")}
    refused = warehouse.run(sim.base_url, sim.read_key)
    after = {table: table_rows(warehouse, table) for table in ("projects", "jobs")}
    result = refused.report.tables["projects"]
    problems = failure_message_problems(warehouse, refused, table_name=True, endpoint=False)
    allowed = warehouse.run(sim.base_url, sim.read_key, allow_mass_delete=True)
    warehouse.check(
        sim.base_url, sim.read_key, results=chaos_results, kind="mass-delete", run_ok=allowed.ok
    )
    assert not refused.ok and result.status == "refused", failed_tables(refused)
    assert "--allow-mass-delete" in (result.error or "")
    assert after["projects"] == before["projects"], "a refused table is left exactly as it was"
    if refused.report.tables["jobs"].status == "refused":
        assert after["jobs"] == before["jobs"]
    assert not problems, problems
    assert allowed.ok, failed_tables(allowed)
    assert allowed.report.tables["projects"].retired == len(doomed)


def test_run_and_issue_tables_exist_from_the_first_run(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    warehouse = Warehouse(tmp_path)
    outcome = warehouse.run(sim.base_url, sim.read_key)
    assert outcome.ok and outcome.issues == 0
    with Reader(warehouse.database, warehouse.dataset) as reader:
        assert "_sync_runs" in reader.tables
        assert "_sync_issues" in reader.tables, "created even when the first run has no issue"
        runs = reader.rows('SELECT DISTINCT run_id FROM "drone_ops"._sync_runs')
        issues = reader.rows('SELECT count(*) AS n FROM "drone_ops"._sync_issues')
    assert [r["run_id"] for r in runs] == [outcome.report.run_id]
    assert issues[0]["n"] == 0


@dataclass
class FailedRun:
    warehouse: Warehouse
    outcome: SyncOutcome


def every_table_fails(workspace: Workspace) -> None:
    """Each table fails for a reason of its own: the archived project list is an HTML page
    (projects; jobs and users depend on it), the job types a bare JSON list, the team list a
    cursor that never ends, the webhook a 500 that does not go away."""
    counter = itertools.count()

    def hook(request: Request, body: dict[str, Any]) -> dict[str, Any] | Reply:
        if request.path == "/v1/projects" and request.query.get("archived") == "true":
            return Reply(200, b"<html>Sign in</html>", {"Content-Type": "text/html"})
        if request.path == "/v1/job-types":
            return Reply.json(workspace.job_types)
        if request.path == "/v1/team":
            body["cursor"] = "o" + "0" * (next(counter) + 1)
            body["team"] = workspace.team[:2]
        if request.path.startswith("/v1/webhooks/"):
            return Reply.error(500, "Internal Server Error")
        return body

    workspace.hooks.append(hook)


@pytest.fixture(scope="module")
def failed_runs(
    tmp_path_factory: pytest.TempPathFactory, chaos_results: ChaosResults
) -> list[FailedRun]:
    """Two runs where every table fails: one against the fixture API with a defect per table,
    one against the simulator answering 503 to every GET (then healed and checked)."""
    runs = []
    workspace = Workspace(KEY)
    every_table_fails(workspace)
    warehouse = Warehouse(tmp_path_factory.mktemp("every-table-fails"))
    with FaultServer(workspace, max_requests=400) as server:
        runs.append(FailedRun(warehouse, warehouse.run(server.base_url, KEY, max_attempts=2)))
    with running_simulator(seed=802, scale="tiny", admin=True) as sim:
        warehouse = Warehouse(tmp_path_factory.mktemp("all-503"))
        sim.set_faults("503:1.0")
        try:
            outcome = warehouse.run(sim.base_url, sim.read_key, max_attempts=2)
        finally:
            sim.set_faults(None)
        runs.append(FailedRun(warehouse, outcome))
        assert warehouse.run(sim.base_url, sim.read_key).ok
        warehouse.check(
            sim.base_url,
            sim.read_key,
            results=chaos_results,
            kind="http-503@100%",
            run_ok=outcome.ok,
        )
    for run in runs:
        assert set(failed_tables(run.outcome)) == set(run.outcome.report.tables), (
            "every table failed",
            failed_tables(run.outcome),
        )
    return runs


def test_failure_messages_give_the_endpoint_and_the_cause(failed_runs: list[FailedRun]) -> None:
    """No empty reason, no StopIteration; each names the request that failed and why."""
    problems = [
        problem
        for run in failed_runs
        for problem in failure_message_problems(run.warehouse, run.outcome, table_name=False)
    ]
    assert not problems, problems


def test_failure_messages_name_the_table(failed_runs: list[FailedRun]) -> None:
    problems = [
        problem
        for run in failed_runs
        for problem in failure_message_problems(run.warehouse, run.outcome, table_name=True)
        if "does not name the table" in problem
    ]
    assert not problems, problems
