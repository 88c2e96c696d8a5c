"""The OpenAPI document states what the validator enforces."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from drone_ops_sync.simulator.bodies import JOB, PROJECT_PATCH
from drone_ops_sync.simulator.openapi import build_document


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return build_document({}, ["wind_turbine", "jt_custom"])


def body_of(doc: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    request = doc["paths"][path][method]["requestBody"]
    schema: dict[str, Any] = request["content"]["application/json"]["schema"]
    return {**schema, "_required": request["required"]}


def param(doc: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    params = doc["paths"][path]["get"]["parameters"]
    return next(p["schema"] for p in params if p["name"] == name)


JOBS = "/v1/projects/{projectId}/jobs"
JOB_ONE = JOBS + "/{jobId}"


@pytest.mark.parametrize(("path", "method"), [(JOBS, "post"), (JOB_ONE, "patch")])
def test_job_bodies_carry_every_part_8_limit(doc: dict[str, Any], path: str, method: str) -> None:
    props = body_of(doc, path, method)["properties"]
    assert props["description"]["maxLength"] == 1000
    assert props["inspection_notes"]["maxLength"] == 2000
    assert props["external_id"]["maxLength"] == 255
    reason = props["other_status_reason"]
    assert (reason["minLength"], reason["maxLength"]) == (1, 200)
    captures = props["capture_types"]
    assert captures["maxItems"] == 20 and captures["uniqueItems"] is True
    assert (props["recurring_interval"]["minimum"], props["recurring_interval"]["maximum"]) == (
        1,
        365,
    )
    assert props["selected_days_of_week"]["maxItems"] == 7
    weeks = props["weeks_of_month"]
    assert weeks["maxItems"] == 5 and weeks["uniqueItems"] is True
    flights = props["flights_per_occurrence"]
    assert (flights["minimum"], flights["maximum"]) == (1, 10)
    assert props["type"]["enum"] == ["wind_turbine", "jt_custom"]
    assert props["latitude"]["nullable"] is True and props["latitude"]["maximum"] == 90


def test_cross_field_rules_are_described(doc: dict[str, Any]) -> None:
    job = body_of(doc, JOBS, "post")["description"]
    for rule in JOB.cross:
        assert rule.text in job
    for words in ("after start_date", "other_status_reason", "latitude and longitude"):
        assert words in job
    assert "6 calendar months" in job and "flexible" in job and "job type" in job
    project = body_of(doc, "/v1/projects/{projectId}", "patch")["description"]
    assert all(rule.text in project for rule in PROJECT_PATCH.cross)


def test_declared_shapes_match_what_the_server_accepts(doc: dict[str, Any]) -> None:
    for path in ("/v1/projects/{projectId}", JOB_ONE, "/v1/webhooks/{webhookId}"):
        assert body_of(doc, path, "patch")["_required"] is False  # no body: no change
    archive = body_of(doc, "/v1/projects/{projectId}/archive", "post")
    assert archive["_required"] is True and "additionalProperties" not in archive
    assert archive["required"] == ["archived"]
    icon = body_of(doc, "/v1/job-types", "post")["properties"]["icon"]
    assert icon["nullable"] is True and icon["maxLength"] == 20
    events = body_of(doc, "/v1/webhooks", "post")["properties"]["event_types"]
    assert events["uniqueItems"] is True and events["minItems"] == 1
    assert param(doc, "/v1/projects", "archived")["enum"] == ["true", "false", ""]
    assert "in_progress" in param(doc, "/v1/projects", "status")["pattern"]
    assert param(doc, "/v1/team", "role")["enum"][-2:] == ["all", ""]
    assert param(doc, "/v1/projects", "cursor")["pattern"].startswith("^(?:(?:projects")


def test_served_document_lists_job_types_created_since_start(
    full: httpx.Client, read: httpx.Client
) -> None:
    created = full.post("/v1/job-types", json={"name": "Chimney survey"}).json()["id"]
    doc = read.get("/openapi.json").json()
    props = doc["paths"][JOBS]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert created in props["properties"]["type"]["enum"]
    assert "wind_turbine" in props["properties"]["type"]["enum"]
