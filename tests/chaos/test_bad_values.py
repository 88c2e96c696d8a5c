"""Bad values from a fixture API on 127.0.0.1 (tests/chaos/fault_server.py), one defect per
case, synced into a copy of a clean warehouse. Each must give one clear named error or a
`_sync_issues` row, never a silent wrong row, and finish in seconds; then the defect goes away
and a clean run must bring the warehouse to equality with the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .bad_data import (
    KEY,
    clean_template,
    heal_and_check,
    named_failure_problems,
    run_defect,
    silent_differences,
)
from .fault_server import Workspace
from .harness import Warehouse
from .results import ChaosResults

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return clean_template(tmp_path_factory.mktemp("clean"))


def issue_problems(
    issues: set[tuple[str, str, str]], wanted: list[tuple[str, str, str]]
) -> list[str]:
    return [f"no _sync_issues row for {key}" for key in wanted if key not in issues]


def test_unknown_enum_values_are_loaded_and_recorded(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    workspace.projects[0]["status"] = "exploded"
    workspace.jobs["prj_001"][0]["priority"] = "urgent"
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = issue_problems(
        run.issue_keys(),
        [("projects", "prj_001", "status"), ("jobs", "job_001", "priority")],
    )
    problems += silent_differences(warehouse, workspace, run)
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    heal_and_check(warehouse, chaos_results, "bad-data:unknown-enum", run, problems)
    assert not problems, problems


def test_record_without_id_fails_its_table_by_name(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    del workspace.jobs["prj_002"][1]["id"]
    warehouse, run = run_defect(template, tmp_path, workspace)
    failed = run.failed()
    problems = named_failure_problems(warehouse, run)
    if set(failed) != {"jobs"}:
        problems.append(f"expected only jobs to fail, got {failed}")
    if "/v1/projects/prj_002/jobs" not in (failed.get("jobs") or ""):
        problems.append(f"the jobs error does not name the page's endpoint: {failed}")
    if run.after.get("jobs") != run.before.get("jobs"):
        problems.append("the jobs table changed although its walk failed")
    heal_and_check(warehouse, chaos_results, "bad-data:missing-id", run, problems)
    assert not problems, problems


def test_values_of_the_wrong_type_are_recorded(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    workspace.jobs["prj_001"][0]["latitude"] = "north"
    workspace.jobs["prj_001"][1]["flights_per_occurrence"] = 2.5
    workspace.projects[1]["created"] = "yesterday"
    workspace.projects[2]["archived"] = "no"
    workspace.job_types[2]["is_predefined"] = "yes"
    workspace.team[1]["created"] = -(2**62)
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = issue_problems(
        run.issue_keys(),
        [
            ("jobs", "job_001", "latitude"),
            ("jobs", "job_002", "flights_per_occurrence"),
            ("projects", "prj_002", "created"),
            ("projects", "prj_003", "archived"),
            ("job_types", "jt_custom1", "is_predefined"),
            ("team_members", "usr_1", "created"),
        ],
    )
    problems += silent_differences(warehouse, workspace, run)
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    heal_and_check(warehouse, chaos_results, "bad-data:wrong-types", run, problems)
    assert not problems, problems


def test_new_fields_become_text_columns(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """Schema drift: a new string field on every project; a new field whose values are a
    string, a number and an object on three jobs (never JSON-quoted strings)."""
    workspace = Workspace(KEY)
    for number, project in enumerate(workspace.projects):
        project["drone_model"] = f"M300-{number}"
    site_codes: list[Any] = ["eu-west", 7, {"grid": "B4"}]
    for job, code in zip(workspace.jobs["prj_001"], site_codes, strict=True):
        job["site_code"] = code
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = silent_differences(warehouse, workspace, run)
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    stored = {
        r["id"]: r.get("site_code") for r in run.after.get("jobs", []) if r["_dlt_valid_to"] is None
    }
    if stored.get("job_001") != "eu-west":
        problems.append(f"a new string field is stored as {stored.get('job_001')!r}, not 'eu-west'")
    heal_and_check(warehouse, chaos_results, "bad-data:new-field", run, problems)
    assert not problems, problems


def test_ten_megabyte_string_is_loaded_whole_and_recorded(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    huge = "Blade inspection notes. " * (10 * 1024 * 1024 // 24)
    workspace.projects[2]["description"] = huge
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = silent_differences(warehouse, workspace, run)
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    # the work of loading it, as CPU time: a busy runner stretches the wall clock, not this
    if run.cpu_seconds > 30:
        problems.append(f"the run took {run.cpu_seconds:.0f} s of CPU")
    problems += issue_problems(run.issue_keys(), [("projects", "prj_003", "description")])
    heal_and_check(warehouse, chaos_results, "bad-data:10MB-string", run, problems)
    assert not problems, problems


def test_unicode_rtl_and_nul_are_stored_exactly_or_recorded(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    workspace.projects[0]["name"] = "Ωmega \u202eevird\u202c 工地 🚁 e\u0301"
    workspace.projects[1]["description"] = "before\x00after"
    workspace.team[0]["first_name"] = "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = silent_differences(warehouse, workspace, run)
    if not run.outcome.ok:
        problems.append(f"the run failed: {run.failed()}")
    heal_and_check(warehouse, chaos_results, "bad-data:unicode-rtl-nul", run, problems)
    assert not problems, problems


def test_project_without_name_or_created_is_recorded(
    template: Warehouse, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    workspace = Workspace(KEY)
    del workspace.projects[0]["name"]
    del workspace.projects[1]["created"]
    warehouse, run = run_defect(template, tmp_path, workspace)
    problems = issue_problems(
        run.issue_keys(), [("projects", "prj_001", "name"), ("projects", "prj_002", "created")]
    )
    failed = run.failed()
    if failed and "projects" not in failed:
        problems.append(f"unexpected failures: {failed}")
    heal_and_check(warehouse, chaos_results, "bad-data:no-name-or-created", run, problems)
    assert not problems, problems
