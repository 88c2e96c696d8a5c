"""Every row of spec part 7 (word for word) and every limit of part 8, both sides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from drone_ops_sync.simulator.rules import STATUSES, six_months_before

pytestmark = pytest.mark.e2e

TODAY = datetime.now(UTC).date()
STATUS_LIST = "status must be one of: " + ", ".join(STATUSES)


def job_body(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Blade survey",
        "type": "wind_turbine",
        "job_pattern": "one_time",
        "start_date": TODAY.isoformat(),
    }
    body.update(over)
    return {k: v for k, v in body.items() if v is not ...}


@pytest.fixture(scope="module")
def project_id(full: httpx.Client) -> str:
    r = full.post(
        "/v1/projects",
        json={"name": "Validation site", "description": "d", "start_date": "2026-01-01"},
    )
    assert r.status_code == 201
    return str(r.json()["id"])


@pytest.fixture(scope="module")
def job_id(full: httpx.Client, project_id: str) -> str:
    r = full.post(f"/v1/projects/{project_id}/jobs", json=job_body())
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.fixture(scope="module")
def pilots(read: httpx.Client) -> list[str]:
    team = read.get("/v1/team", params={"role": "pilot"}).json()["team"]
    assert len(team) >= 2
    return [m["id"] for m in team]


def expect(r: httpx.Response, status: int, message: str) -> None:
    assert r.status_code == status, r.text
    assert r.json() == {"message": message}


# -- part 7: assign / unassign -------------------------------------------------------------------
@pytest.mark.parametrize("body", [{}, {"pilots": []}, {"pilots": None}])
def test_assign_pilots_missing_or_empty(
    full: httpx.Client, project_id: str, job_id: str, body: dict[str, Any]
) -> None:
    r = full.post(f"/v1/projects/{project_id}/jobs/{job_id}/assign", json=body)
    expect(r, 400, "pilots array is required and must not be empty")


def test_assign_unknown_job_or_pilot(
    full: httpx.Client, project_id: str, job_id: str, pilots: list[str]
) -> None:
    r = full.post(f"/v1/projects/{project_id}/jobs/job_nope/assign", json={"pilots": pilots[:1]})
    expect(r, 404, "One or more pilots not found")
    r = full.post(
        f"/v1/projects/{project_id}/jobs/{job_id}/assign", json={"pilots": [pilots[0], "usr_x"]}
    )
    expect(r, 404, "One or more pilots not found")


@pytest.mark.parametrize("body", [{}, {"pilots": []}])
def test_unassign_pilots_missing_or_empty(
    full: httpx.Client, project_id: str, job_id: str, body: dict[str, Any]
) -> None:
    r = full.post(f"/v1/projects/{project_id}/jobs/{job_id}/unassign", json=body)
    expect(r, 400, "pilots array is required and must contain at least one pilot ID")


def test_unassign_unknown_job_or_no_assignments(
    full: httpx.Client, project_id: str, job_id: str, pilots: list[str]
) -> None:
    r = full.post(f"/v1/projects/{project_id}/jobs/job_nope/unassign", json={"pilots": pilots})
    expect(r, 404, "No pilot assignments found for this job")
    r = full.post(f"/v1/projects/{project_id}/jobs/{job_id}/unassign", json={"pilots": pilots})
    expect(r, 404, "No pilot assignments found for this job")


# -- part 7: PATCH project -----------------------------------------------------------------------
PATCH_ERRORS = [
    ({"name": ""}, "name must be between 1 and 100 characters"),
    ({"name": "x" * 101}, "name must be between 1 and 100 characters"),
    ({"description": ""}, "description must be between 1 and 1000 characters"),
    ({"description": "x" * 1001}, "description must be between 1 and 1000 characters"),
    ({"start_date": "2026-13-01"}, "start_date must be a valid ISO date string"),
    ({"start_date": "next tuesday"}, "start_date must be a valid ISO date string"),
    ({"end_date": "2026-01-01"}, "end_date must be after start_date"),
    ({"end_date": "2025-12-31"}, "end_date must be after start_date"),
    ({"status": "bogus"}, STATUS_LIST),
    ({"status": "other"}, 'other_status_reason is required when status is "other"'),
    ({"external_id": "x" * 256}, "external_id must not exceed 255 characters"),
    ({"laanc_number": "x" * 101}, "laanc_number must not exceed 100 characters"),
    (
        {"status": "other", "other_status_reason": "x" * 201},
        "other_status_reason must be between 1 and 200 characters",
    ),
]


@pytest.mark.parametrize(("body", "message"), PATCH_ERRORS)
def test_patch_project_errors(
    full: httpx.Client, project_id: str, body: dict[str, Any], message: str
) -> None:
    before = full.get(f"/v1/projects/{project_id}").json()
    expect(full.patch(f"/v1/projects/{project_id}", json=body), 400, message)
    assert full.get(f"/v1/projects/{project_id}").json() == before


def test_status_list_message_is_exact() -> None:
    assert STATUS_LIST == (
        "status must be one of: draft, not_started, planned, in_progress, completed, on_hold, "
        "weather_delayed, technical_issues, cancelled, aborted, other"
    )


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x"},
        {"name": "x" * 100},
        {"description": "x"},
        {"description": "x" * 1000},
        {"external_id": "x" * 255},
        {"external_id": None},
        {"laanc_number": "x" * 100},
        {"laanc_number": None},
        {"status": "other", "other_status_reason": "x"},
        {"status": "other", "other_status_reason": "x" * 200},
        {"end_date": "2026-01-02"},
        {"end_date": None},
    ],
)
def test_patch_project_limits_accepted(
    full: httpx.Client, project_id: str, body: dict[str, Any]
) -> None:
    r = full.patch(f"/v1/projects/{project_id}", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "Project updated successfully"}
    got = full.get(f"/v1/projects/{project_id}").json()
    for k, v in body.items():
        assert got[k] == v


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("PATCH", "", {"name": "a"}),
        ("GET", "", None),
        ("POST", "/archive", {"archived": True}),
        ("DELETE", "", None),
    ],
)
def test_unknown_project(
    full: httpx.Client, method: str, suffix: str, body: dict[str, Any] | None
) -> None:
    r = full.request(method, f"/v1/projects/prj_unknown{suffix}", json=body)
    expect(r, 404, "Project not found")


@pytest.mark.parametrize("value", ["yes", 1, None, "true"])
def test_archive_not_boolean(full: httpx.Client, project_id: str, value: Any) -> None:
    r = full.post(f"/v1/projects/{project_id}/archive", json={"archived": value})
    expect(r, 400, "archived must be a boolean")


def test_unknown_body_fields_are_ignored_and_patch_needs_no_body(
    full: httpx.Client, project_id: str, job_id: str
) -> None:
    before = full.get(f"/v1/projects/{project_id}").json()
    for path in (f"/v1/projects/{project_id}", f"/v1/projects/{project_id}/jobs/{job_id}"):
        r = full.patch(path)  # no body at all: nothing to change
        assert r.status_code == 200, r.text
    assert full.get(f"/v1/projects/{project_id}").json() == before
    r = full.post(f"/v1/projects/{project_id}/archive", json={"archived": False, "x": 1})
    assert r.status_code == 200
    r = full.patch(f"/v1/projects/{project_id}/jobs/{job_id}", json={"status": None})
    assert r.status_code == 200  # null means "not given", as on creation
    r = full.post("/v1/job-types", json={"name": "Null icon", "icon": None})
    assert full.get(f"/v1/job-types/{r.json()['id']}").json()["icon"] == "settings"
    r = full.post(
        "/v1/webhooks",
        json={"name": "h", "url": "https://x.example", "event_types": ["project.created"] * 2},
    )
    assert r.status_code == 400 and r.json()["message"].startswith("event_types must be")


# -- part 7/8: job types ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "name is required"),
        ({"icon": "wind"}, "name is required"),
        ({"name": ""}, "name must be between 1 and 50 characters"),
        ({"name": "x" * 51}, "name must be between 1 and 50 characters"),
        ({"name": "ok", "icon": 5}, "icon must be a string"),
        ({"name": "ok", "icon": "x" * 21}, "icon must be less than 20 characters"),
    ],
)
def test_create_job_type_errors(full: httpx.Client, body: dict[str, Any], message: str) -> None:
    expect(full.post("/v1/job-types", json=body), 400, message)


@pytest.mark.parametrize(
    ("body", "icon"),
    [
        ({"name": "x"}, "settings"),
        ({"name": "x" * 50, "icon": "x" * 20}, "x" * 20),
        ({"name": "Tower", "icon": "radio"}, "radio"),
    ],
)
def test_create_job_type_limits_accepted(
    full: httpx.Client, body: dict[str, Any], icon: str
) -> None:
    r = full.post("/v1/job-types", json=body)
    assert r.status_code == 201
    got = full.get(f"/v1/job-types/{r.json()['id']}").json()
    assert got == {"id": r.json()["id"], "name": body["name"], "icon": icon, "is_predefined": False}


def test_unknown_job_type(read: httpx.Client) -> None:
    expect(read.get("/v1/job-types/nope"), 404, "Job Type not found")
    assert read.get("/v1/job-types/wind_turbine").json()["is_predefined"] is True


# -- part 7/8: jobs ------------------------------------------------------------------------------
SIX_MONTHS = six_months_before(TODAY)
JOB_ERRORS = [
    (job_body(name=...), "name is required"),
    (job_body(name=""), "name must be between 1 and 100 characters"),
    (job_body(name="x" * 101), "name must be between 1 and 100 characters"),
    (job_body(type=...), "type is required"),
    (job_body(type="no_such_type"), "type must match a configured job type"),
    (job_body(job_pattern="sometimes"), "job_pattern must be one_time or recurring"),
    (job_body(job_pattern=...), "job_pattern must be one_time or recurring"),
    (job_body(start_date=...), "start_date is required"),
    (job_body(start_date="2026/01/01"), "start_date must be a valid ISO date string"),
    (
        job_body(start_date=(SIX_MONTHS - timedelta(days=1)).isoformat()),
        "start_date must not be more than 6 months in the past",
    ),
    (
        job_body(end_date=(TODAY - timedelta(days=1)).isoformat()),
        "end_date must be on or after start_date",
    ),
    (job_body(latitude=90.0001, longitude=0), "latitude must be between -90 and 90"),
    (job_body(latitude=-90.0001, longitude=0), "latitude must be between -90 and 90"),
    (job_body(latitude=0, longitude=180.0001), "longitude must be between -180 and 180"),
    (job_body(latitude=0, longitude=-180.0001), "longitude must be between -180 and 180"),
    (job_body(latitude=10), "latitude and longitude must be provided together"),
    (job_body(longitude=10), "latitude and longitude must be provided together"),
    (job_body(status="other"), 'other_status_reason is required when status is "other"'),
    (job_body(status="nope"), STATUS_LIST),
    (job_body(external_id="x" * 256), "external_id must not exceed 255 characters"),
    (job_body(priority="urgent"), "priority must be one of: low, medium, high"),
    (job_body(description="x" * 1001), "description must not exceed 1000 characters"),
    (job_body(inspection_notes="x" * 2001), "inspection_notes must not exceed 2000 characters"),
    (
        job_body(status="other", other_status_reason="x" * 201),
        "other_status_reason must be between 1 and 200 characters",
    ),
    (job_body(capture_types=["lidar_scan"] * 21), "capture_types must not exceed 20 items"),
    (job_body(capture_types=["lidar_scan"] * 20), "capture_types must not contain duplicates"),
    (
        job_body(capture_types=["lidar_scan", "lidar_scan"]),
        "capture_types must not contain duplicates",
    ),
    (
        job_body(capture_types=["x-ray"]),
        "capture_types must contain only: drone_inspection, thermal_inspection, video_capture, "
        "3d_mapping, lidar_scan, orthomosaic, ground_smartphone, ground_360, panorama",
    ),
    (
        job_body(job_pattern="recurring", recurring_frequency="hourly"),
        "recurring_frequency must be one of: daily, weekly, monthly, yearly, flexible",
    ),
    (job_body(recurring_interval=0), "recurring_interval must be between 1 and 365"),
    (job_body(recurring_interval=366), "recurring_interval must be between 1 and 365"),
    (
        job_body(job_pattern="recurring", recurring_frequency="flexible", recurring_interval=2),
        "recurring_interval cannot be used with flexible frequency",
    ),
    (
        job_body(selected_days_of_week=[0, 1, 2, 3, 4, 5, 6, 0]),
        "selected_days_of_week must not exceed 7 values",
    ),
    (
        job_body(selected_days_of_week=[7]),
        "selected_days_of_week values must be one of: 0, 1, 2, 3, 4, 5, 6",
    ),
    (
        job_body(weeks_of_month=[1, 2, 3, 4, -1, 1]),
        "weeks_of_month must not exceed 5 values",
    ),
    (job_body(weeks_of_month=[1, 1]), "weeks_of_month must not contain duplicates"),
    (job_body(weeks_of_month=[5]), "weeks_of_month values must be one of: 1, 2, 3, 4, -1"),
    (job_body(week_of_month=0), "week_of_month must be one of: 1, 2, 3, 4, -1"),
    (job_body(flights_per_occurrence=0), "flights_per_occurrence must be between 1 and 10"),
    (job_body(flights_per_occurrence=11), "flights_per_occurrence must be between 1 and 10"),
]


@pytest.mark.parametrize(("body", "message"), JOB_ERRORS)
def test_create_job_errors(
    full: httpx.Client, project_id: str, body: dict[str, Any], message: str
) -> None:
    expect(full.post(f"/v1/projects/{project_id}/jobs", json=body), 400, message)


JOB_ACCEPTED = [
    job_body(name="x"),
    job_body(name="x" * 100),
    job_body(description="x" * 1000),
    job_body(inspection_notes="x" * 2000),
    job_body(external_id="x" * 255),
    job_body(start_date=SIX_MONTHS.isoformat()),
    job_body(end_date=TODAY.isoformat()),
    job_body(latitude=90, longitude=180),
    job_body(latitude=-90, longitude=-180),
    job_body(status="other", other_status_reason="x" * 200),
    job_body(status="other", other_status_reason="x"),
    job_body(capture_types=list(dict.fromkeys(["drone_inspection", "thermal_inspection"]))),
    job_body(
        capture_types=[
            "drone_inspection",
            "thermal_inspection",
            "video_capture",
            "3d_mapping",
            "lidar_scan",
            "orthomosaic",
            "ground_smartphone",
            "ground_360",
            "panorama",
        ]
    ),
    job_body(job_pattern="recurring", recurring_frequency="daily", recurring_interval=1),
    job_body(job_pattern="recurring", recurring_frequency="daily", recurring_interval=365),
    job_body(
        job_pattern="recurring",
        recurring_frequency="weekly",
        selected_days_of_week=[0, 1, 2, 3, 4, 5, 6],
    ),
    job_body(
        job_pattern="recurring",
        recurring_frequency="monthly",
        weeks_of_month=[1, 2, 3, 4, -1],
        week_of_month=-1,
    ),
    job_body(job_pattern="recurring", recurring_frequency="flexible", flights_per_occurrence=1),
    job_body(job_pattern="recurring", flights_per_occurrence=10),
]


@pytest.mark.parametrize("body", JOB_ACCEPTED)
def test_create_job_limits_accepted(
    full: httpx.Client, project_id: str, body: dict[str, Any]
) -> None:
    r = full.post(f"/v1/projects/{project_id}/jobs", json=body)
    assert r.status_code == 201, r.text
    job = full.get(f"/v1/projects/{project_id}/jobs/{r.json()['id']}").json()
    for k, v in body.items():
        assert job[k] == v, k
    assert job["project_id"] == project_id
    assert job["status"] == body.get("status", "not_started")
    assert job["priority"] == "medium"


def test_job_defaults_and_one_time_recurring_fields_null(
    full: httpx.Client, project_id: str
) -> None:
    body = job_body(recurring_frequency="weekly", selected_days_of_week=[1])
    r = full.post(f"/v1/projects/{project_id}/jobs", json=body)
    job = full.get(f"/v1/projects/{project_id}/jobs/{r.json()['id']}").json()
    assert job["status"] == "not_started" and job["priority"] == "medium"
    assert job["recurring_frequency"] is None and job["selected_days_of_week"] is None
    assert job["capture_types"] == [] and job["latitude"] is None


def test_create_job_unknown_project(full: httpx.Client) -> None:
    expect(full.post("/v1/projects/prj_nope/jobs", json=job_body()), 404, "Project not found")


def test_unknown_job(full: httpx.Client, project_id: str) -> None:
    expect(full.get(f"/v1/projects/{project_id}/jobs/job_nope"), 404, "Job not found")
    expect(full.delete(f"/v1/projects/{project_id}/jobs/job_nope"), 404, "Job not found")


def test_job_under_another_project_is_unknown(
    full: httpx.Client, project_id: str, job_id: str
) -> None:
    other = full.get("/v1/projects").json()["projects"][0]["id"]
    assert other != project_id
    expect(full.get(f"/v1/projects/{other}/jobs/{job_id}"), 404, "Job not found")


def test_unknown_member_and_webhook(read: httpx.Client) -> None:
    expect(read.get("/v1/team/usr_nope"), 404, "User not found")
    expect(read.get("/v1/webhooks/wh_nope"), 404, "Webhook not found")


# -- bodies --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "Request body must be valid JSON"),
        (b"[1, 2]", "Request body must be a JSON object"),
        (b'"text"', "Request body must be a JSON object"),
        (b"\xff\xfe", "Request body must be valid JSON"),
    ],
)
def test_malformed_bodies_are_400(
    full: httpx.Client, project_id: str, content: bytes, message: str
) -> None:
    for method, path in [
        ("PATCH", f"/v1/projects/{project_id}"),
        ("POST", f"/v1/projects/{project_id}/jobs"),
        ("POST", "/v1/job-types"),
        ("POST", f"/v1/projects/{project_id}/archive"),
        ("POST", "/v1/projects"),
        ("POST", "/v1/webhooks"),
    ]:
        r = full.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        expect(r, 400, message)


def test_body_size_limit(full: httpx.Client) -> None:
    big = b'{"name": "' + b"x" * 1_048_600 + b'"}'
    r = full.post("/v1/job-types", content=big, headers={"Content-Type": "application/json"})
    expect(r, 413, "Request body too large")
