"""Bad pages from a fixture API on 127.0.0.1 (tests/chaos/fault_server.py): duplicate ids
across pages, one job listed under two projects, a cursor that repeats, a cursor that never
ends while its pages repeat the same rows, a 200 whose body is not JSON, a JSON list instead of
an object. Each must give one clear named error or a `_sync_issues` row and never a silent
wrong row or duplicate, must finish in seconds (the fixture server refuses a 401st request, so
even a runaway walk ends), and a clean run afterwards must bring the warehouse to equality."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.sources.drone_ops.internal import settings

from .bad_data import (
    KEY,
    clean_template,
    duplicate_current_rows,
    heal_and_check,
    named_failure_problems,
    run_defect,
    silent_differences,
)
from .fault_server import (
    Reply,
    Request,
    Workspace,
    delivery_record,
    job_record,
    member_record,
    project_record,
)
from .harness import Warehouse
from .results import ChaosResults
from .truth import Reader

pytestmark = [pytest.mark.e2e]

# the defaults a user runs with (the cases about slow failure must not hide behind small ones)
DEFAULT_RETRIES: dict[str, Any] = {"max_attempts": 8, "retry_budget_seconds": 300.0}
FAILS_FAST_S = 45.0
"""A failure "fails fast" when it is not retried on the full schedule: with DEFAULT_RETRIES
the backoff alone waits 0.5 + 1 + 2 + 4 + 8 + 16 + 30 = 61.5 s, more than this bound on any
machine, while the short retries wait 1.5 s; the rest is room for the run's own work, which a
runner shared with other work makes several times slower (the bound was 15 s)."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return clean_template(tmp_path_factory.mktemp("clean"))


def with_new_and_changed_records(duplicated: bool) -> Workspace:
    """The clean workspace plus a new project, a changed one, a new team member and two new
    delivery-log entries; with `duplicated`, each of them also ends one page (two records a
    page) and starts the next (new or changed, so the run has to load them, once)."""
    workspace = Workspace(KEY)
    fresh = project_record(6, name="Solar park 6")
    changed = workspace.projects[2]
    changed["status"] = "in_progress"
    member = member_record(7)
    newest = delivery_record(9, "wh_001", workspace.projects[0])
    logs = workspace.logs["wh_001"]
    if duplicated:
        workspace.projects[1:3] = [fresh, copy.deepcopy(fresh), changed, copy.deepcopy(changed)]
        workspace.team[1:1] = [member, copy.deepcopy(member)]
        logs[0:0] = [delivery_record(10, "wh_001", fresh), newest, copy.deepcopy(newest)]
    else:
        workspace.projects.insert(1, fresh)
        workspace.team.insert(1, member)
        logs[0:0] = [delivery_record(10, "wh_001", fresh), newest]
    return workspace


def test_duplicate_ids_across_pages_are_loaded_once(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = with_new_and_changed_records(duplicated=True)
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = silent_differences(warehouse, workspace, run)
    duplicates = duplicate_current_rows(run.after)
    if duplicates:
        problems.append(f"{duplicates} duplicate current rows")
    with Reader(warehouse.database, warehouse.dataset) as reader:
        ids = [row["id"] for row in reader.current_rows("webhook_deliveries")]
    if len(ids) != len(set(ids)):
        problems.append(f"{len(ids) - len(set(ids))} duplicate delivery rows")
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    clean = with_new_and_changed_records(duplicated=False)
    heal_and_check(
        warehouse, chaos_results, "bad-data:duplicate-across-pages", run, problems, clean=clean
    )
    assert not problems, problems


def test_job_listed_under_two_projects_is_current_once(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """job_001 (project_id prj_001, changed since the last run) is also listed under
    prj_002, and a new job_900 of prj_003 also under prj_004: each must end up with one
    current row, under its own project."""
    workspace = Workspace(KEY)
    moved = workspace.jobs["prj_001"][0]
    moved["status"] = "in_progress"
    workspace.jobs["prj_002"].append(copy.deepcopy(moved))
    new_job = job_record(900, "prj_003")
    workspace.jobs["prj_003"].append(new_job)
    workspace.jobs["prj_004"].append(copy.deepcopy(new_job))
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = named_failure_problems(warehouse, run)
    for job_id, owner in (("job_001", "prj_001"), ("job_900", "prj_003")):
        current = [
            row
            for row in run.after.get("jobs", [])
            if row["id"] == job_id and row["_dlt_valid_to"] is None
        ]
        if "jobs" in run.failed():
            continue  # a named failure of the table is an acceptable answer
        if len(current) != 1:
            problems.append(f"{job_id} has {len(current)} current rows")
        elif current[0]["project_id"] != owner:
            problems.append(f"{job_id} is stored under {current[0]['project_id']}")
    heal_and_check(warehouse, chaos_results, "bad-data:job-under-two-projects", run, problems)
    assert not problems, problems


def test_cursor_that_repeats_fails_the_table_by_name(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """Page 2 of the project list hands back the cursor of page 1."""
    workspace = Workspace(KEY)

    def repeat(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        listing = request.path == "/v1/projects" and "archived" not in request.query
        if listing and request.query.get("cursor"):
            body["cursor"] = "o2"
        return body

    workspace.hooks.append(repeat)
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = named_failure_problems(warehouse, run)
    if "projects" not in run.failed():
        problems.append(f"projects did not fail: {run.failed()}")
    # stopped at the repeat, not walked round until the fixture server refuses (400 requests):
    # counted, since on a busy machine a correct run alone can take over 20 s
    project_requests = run.requests.get("/v1/projects", 0)
    if project_requests > 20:
        problems.append(f"the project walk made {project_requests} requests before stopping")
    if run.seconds > FAILS_FAST_S:
        problems.append(f"the run took {run.seconds:.0f}s")
    if run.after.get("projects") != run.before.get("projects"):
        problems.append("the projects table changed although its walk failed")
    heal_and_check(warehouse, chaos_results, "bad-data:repeating-cursor", run, problems)
    assert not problems, problems


def test_endless_cursor_repeating_rows_is_stopped_early(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """The team list never ends: every page carries a new cursor and the same two members.
    The sync must notice within a few pages (the fixture server would refuse the 401st
    request anyway, so a walk of 100,000 pages cannot hang the suite)."""
    workspace = Workspace(KEY)
    counter = itertools.count()

    def endless(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        if request.path == "/v1/team":
            body["team"] = workspace.team[:2]
            body["count"] = 2
            # a new cursor every time ("o0", "o00", ...: all read as offset 0)
            body["cursor"] = "o" + "0" * (next(counter) + 1)
        return body

    workspace.hooks.append(endless)
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = named_failure_problems(warehouse, run)
    team_requests = run.requests.get("/v1/team", 0)
    if team_requests > 20:
        problems.append(f"the team walk made {team_requests} requests before stopping")
    if "team_members" not in run.failed():
        problems.append(f"team_members did not fail: {run.failed()}")
    heal_and_check(warehouse, chaos_results, "bad-data:endless-cursor", run, problems)
    assert not problems, problems


def test_non_json_200_fails_fast_by_name(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """The team list answers 200 with an HTML maintenance page, with the default retry
    settings: the run ends within seconds, naming the endpoint and the cause."""
    workspace = Workspace(KEY)

    def html(request: Request, body: dict[str, Any]) -> dict[str, Any] | Reply:
        if request.path == "/v1/team":
            page = b"<html><body>Down for maintenance</body></html>"
            return Reply(200, page, {"Content-Type": "text/html"})
        return body

    workspace.hooks.append(html)
    warehouse, run = run_defect(template, tmp_path, workspace, **DEFAULT_RETRIES)
    problems = named_failure_problems(warehouse, run)
    if "team_members" not in run.failed():
        problems.append(f"team_members did not fail: {run.failed()}")
    team_requests = run.requests.get("/v1/team", 0)
    if team_requests > settings.SHORT_RETRY_ATTEMPTS:
        problems.append(f"{team_requests} team requests: retried like a busy server")
    if run.seconds > FAILS_FAST_S:
        problems.append(f"the run took {run.seconds:.0f}s")
    if "JSON" not in (run.failed().get("team_members") or ""):
        problems.append(f"the error does not say the body is not JSON: {run.failed()}")
    heal_and_check(warehouse, chaos_results, "bad-data:non-json-200", run, problems)
    assert not problems, problems


def test_json_list_instead_of_object_fails_fast_by_name(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)

    def bare_list(request: Request, body: dict[str, Any]) -> dict[str, Any] | Reply:
        if request.path == "/v1/job-types":
            return Reply.json(workspace.job_types)
        return body

    workspace.hooks.append(bare_list)
    warehouse, run = run_defect(template, tmp_path, workspace, **DEFAULT_RETRIES)
    problems = named_failure_problems(warehouse, run)
    if "job_types" not in run.failed():
        problems.append(f"job_types did not fail: {run.failed()}")
    job_type_requests = run.requests.get("/v1/job-types", 0)
    if job_type_requests > settings.SHORT_RETRY_ATTEMPTS:
        problems.append(f"{job_type_requests} job type requests: retried like a busy server")
    if run.seconds > FAILS_FAST_S:
        problems.append(f"the run took {run.seconds:.0f}s")
    heal_and_check(warehouse, chaos_results, "bad-data:json-list", run, problems)
    assert not problems, problems
