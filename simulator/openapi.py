"""OpenAPI 3.0 document of what the simulator implements (served at GET /openapi.json).

It describes the spec's endpoints plus the paths we decided on (see docs/api-assumptions.md),
every status code each operation can answer, and exact response shapes, so that schemathesis
can check responses against it.
"""

from __future__ import annotations

from typing import Any

from .validation import CAPTURE_TYPES, EVENT_TYPES, FREQUENCIES, ROLES, STATUSES

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def obj(props: dict[str, Schema], required: list[str] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
    }


STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
DATE: Schema = {"type": "string", "format": "date"}
STATUS: Schema = {"type": "string", "enum": list(STATUSES)}
WEEKS: Schema = {"type": "integer", "enum": [1, 2, 3, 4, -1]}

HUMAN = obj(
    {
        "id": STR,
        "email": STR,
        "first_name": STR,
        "last_name": STR,
        "profile_picture": nullable(STR),
    }
)
API_KEY = obj({"id": STR, "type": {"type": "string", "enum": ["api_key"]}, "name": STR})
WEBHOOK_HUMAN = obj({"id": STR, "email": STR, "first_name": STR, "last_name": STR})

PROJECT = obj(
    {
        "id": STR,
        "name": STR,
        "description": STR,
        "status": STATUS,
        "start_date": DATE,
        "end_date": nullable(DATE),
        "created": INT,
        "updated": INT,
        "archived": BOOL,
        "external_id": nullable(STR),
        "laanc_number": nullable(STR),
        "created_by": {"oneOf": [ref("Creator"), ref("ApiKeyCreator")], "nullable": True},
        "other_status_reason": nullable(STR),
    }
)

_JOB_FIELDS: dict[str, Schema] = {
    "id": STR,
    "name": STR,
    "description": nullable(STR),
    "type": STR,
    "status": STATUS,
    "priority": {"type": "string", "enum": ["low", "medium", "high"]},
    "job_pattern": {"type": "string", "enum": ["one_time", "recurring"]},
    "start_date": DATE,
    "end_date": nullable(DATE),
    "latitude": nullable({"type": "number", "minimum": -90, "maximum": 90}),
    "longitude": nullable({"type": "number", "minimum": -180, "maximum": 180}),
    "project_id": STR,
    "inspection_notes": nullable(STR),
    "capture_types": {"type": "array", "items": {"type": "string", "enum": list(CAPTURE_TYPES)}},
    "external_id": nullable(STR),
    "created": INT,
    "updated": INT,
    "other_status_reason": nullable(STR),
    "recurring_frequency": nullable({"type": "string", "enum": list(FREQUENCIES)}),
    "recurring_interval": nullable(INT),
    "selected_days_of_week": nullable(
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 6}}
    ),
    "week_of_month": nullable(WEEKS),
    "weeks_of_month": nullable({"type": "array", "items": WEEKS}),
    "flights_per_occurrence": nullable(INT),
}
JOB = obj(_JOB_FIELDS)
JOB_TYPE = obj({"id": STR, "name": STR, "icon": STR, "is_predefined": BOOL})
_MEMBER: dict[str, Schema] = {
    "id": STR,
    "email": STR,
    "first_name": nullable(STR),
    "last_name": nullable(STR),
    "role": {"type": "string", "enum": list(ROLES)},
    "title": nullable(STR),
    "phone_number": nullable(STR),
    "profile_picture": nullable(STR),
    "created": INT,
    "updated": INT,
}
MEMBER = obj(_MEMBER)
MEMBER_ROW = obj({**_MEMBER, "status": {"type": "string", "enum": ["active", "invited"]}})
WEBHOOK = obj(
    {
        "id": STR,
        "name": STR,
        "url": STR,
        "event_types": {"type": "array", "items": {"type": "string", "enum": list(EVENT_TYPES)}},
        "status": {"type": "string", "enum": ["active", "disabled"]},
        "failure_count": INT,
        "created": INT,
        "updated": INT,
        "created_by": {"oneOf": [ref("WebhookCreator"), ref("ApiKeyCreator")]},
        "last_triggered_at": nullable(INT),
    }
)
LOG = obj(
    {
        "id": STR,
        "event_type": STR,
        "url": STR,
        "status": {"type": "string", "enum": ["success", "failed"]},
        "response_status": INT,
        "response_body": STR,
        "request_payload": STR,
        "duration_ms": INT,
        "error_message": nullable(STR),
        "created": INT,
    }
)
ERROR = obj({"message": STR})
CURSOR = nullable(STR)


def page(name: str, item: str, count: str = "count") -> Schema:
    return obj(
        {name: {"type": "array", "items": ref(item), "maxItems": 50}, count: INT, "cursor": CURSOR}
    )


def _json(schema: Schema) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(codes: list[int]) -> dict[str, Any]:
    text = {
        400: "Invalid request",
        401: "Missing or invalid API key",
        403: "read_only key on a write operation",
        404: "Not found",
        413: "Request body too large",
        429: "Simulated rate limit (fault injection); see Retry-After",
        500: "Simulated server error (fault injection)",
        502: "Simulated bad gateway (fault injection)",
        503: "Simulated unavailability (fault injection)",
    }
    out: dict[str, Any] = {}
    for c in codes:
        resp: dict[str, Any] = {"description": text[c], **_json(ref("Error"))}
        if c == 429:
            resp["headers"] = {"Retry-After": {"schema": INT, "required": True}}
        out[str(c)] = resp
    return out


GET_ERRORS = [401, 429, 500, 502, 503]
WRITE_ERRORS = [400, 401, 403, 413]


_EXAMPLES: dict[str, str] = {}


def _param(name: str, where: str = "path", schema: Schema | None = None) -> Schema:
    out: Schema = {
        "name": name,
        "in": where,
        "required": where == "path",
        "schema": schema or STR,
    }
    if where == "path" and name in _EXAMPLES:
        out["example"] = _EXAMPLES[name]
    return out


def _get(summary: str, schema: Schema, params: list[Schema], errors: list[int]) -> Schema:
    return {
        "summary": summary,
        "parameters": params,
        "responses": {"200": {"description": "OK", **_json(schema)}, **_errors(sorted(errors))},
    }


def _write(
    summary: str,
    body: Schema | None,
    status: int,
    response: Schema | None,
    params: list[Schema],
    errors: list[int],
) -> Schema:
    ok: dict[str, Any] = {"description": "OK"}
    if response is not None:
        ok.update(_json(response))
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": params,
        "responses": {str(status): ok, **_errors(sorted(set(errors)))},
    }
    if body is not None:
        op["requestBody"] = {"required": True, **_json(body)}
    return op


def build_document(examples: dict[str, str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.0.3 document; `examples` gives real path ids so tools reach real rows."""
    _EXAMPLES.clear()
    _EXAMPLES.update(examples or {})
    cursor = _param("cursor", "query")
    pid, jid = _param("projectId"), _param("jobId")
    msg, created = ref("Message"), ref("Created")
    project_patch: Schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "description": {"type": "string", "minLength": 1, "maxLength": 1000},
            "status": STATUS,
            "start_date": DATE,
            "end_date": nullable(DATE),
            "external_id": nullable({"type": "string", "maxLength": 255}),
            "laanc_number": nullable({"type": "string", "maxLength": 100}),
            "other_status_reason": {"type": "string", "minLength": 1, "maxLength": 200},
        },
    }
    project_create = {**project_patch, "required": ["name", "description", "start_date"]}
    job_props = {
        k: v for k, v in _JOB_FIELDS.items() if k not in ("id", "project_id", "created", "updated")
    }
    job_props["name"] = {"type": "string", "minLength": 1, "maxLength": 100}
    job_body: Schema = {"type": "object", "properties": job_props}
    job_create = {**job_body, "required": ["name", "type", "job_pattern", "start_date"]}
    pilots: Schema = {
        "type": "object",
        "properties": {"pilots": {"type": "array", "items": STR, "minItems": 1}},
        "required": ["pilots"],
    }
    webhook_body: Schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "url": {"type": "string", "format": "uri"},
            "event_types": {
                "type": "array",
                "items": {"type": "string", "enum": list(EVENT_TYPES)},
                "minItems": 1,
            },
            "status": {"type": "string", "enum": ["active", "disabled"]},
        },
    }
    paths: dict[str, Any] = {
        "/v1/projects": {
            "get": _get(
                "List projects",
                page("projects", "Project"),
                [cursor, _param("status", "query"), _param("archived", "query")],
                [*GET_ERRORS, 400],
            ),
            "post": _write("Create a project", project_create, 201, created, [], WRITE_ERRORS),
        },
        "/v1/projects/{projectId}": {
            "get": _get("Get a project", ref("Project"), [pid], [*GET_ERRORS, 404]),
            "patch": _write(
                "Update a project", project_patch, 200, msg, [pid], [*WRITE_ERRORS, 404]
            ),
            "delete": _write("Delete a project", None, 204, None, [pid], [401, 403, 404]),
        },
        "/v1/projects/{projectId}/archive": {
            "post": _write(
                "Archive or restore",
                obj({"archived": BOOL}),
                200,
                msg,
                [pid],
                [*WRITE_ERRORS, 404],
            )
        },
        "/v1/projects/{projectId}/jobs": {
            "get": _get("List jobs", page("jobs", "Job"), [pid, cursor], [*GET_ERRORS, 400, 404]),
            "post": _write("Create a job", job_create, 201, created, [pid], [*WRITE_ERRORS, 404]),
        },
        "/v1/projects/{projectId}/jobs/{jobId}": {
            "get": _get("Get a job", ref("Job"), [pid, jid], [*GET_ERRORS, 404]),
            "patch": _write("Update a job", job_body, 200, msg, [pid, jid], [*WRITE_ERRORS, 404]),
            "delete": _write("Delete a job", None, 204, None, [pid, jid], [401, 403, 404]),
        },
        "/v1/projects/{projectId}/jobs/{jobId}/assign": {
            "post": _write(
                "Assign pilots", pilots, 200, ref("AssignResult"), [pid, jid], [*WRITE_ERRORS, 404]
            )
        },
        "/v1/projects/{projectId}/jobs/{jobId}/unassign": {
            "post": _write(
                "Unassign pilots",
                pilots,
                200,
                ref("UnassignResult"),
                [pid, jid],
                [*WRITE_ERRORS, 404],
            )
        },
        "/v1/job-types": {
            "get": _get(
                "List job types", page("job_types", "JobType"), [cursor], [*GET_ERRORS, 400]
            ),
            "post": _write(
                "Create a job type",
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1, "maxLength": 50},
                        "icon": {"type": "string", "maxLength": 20},
                    },
                    "required": ["name"],
                },
                201,
                created,
                [],
                WRITE_ERRORS,
            ),
        },
        "/v1/job-types/{jobTypeId}": {
            "get": _get("Get a job type", ref("JobType"), [_param("jobTypeId")], [*GET_ERRORS, 404])
        },
        "/v1/team": {
            "get": _get(
                "List team members",
                page("team", "TeamMemberRow"),
                [cursor, _param("role", "query", {"type": "string", "enum": [*ROLES, "all"]})],
                [*GET_ERRORS, 400],
            )
        },
        "/v1/team/{teamMemberId}": {
            "get": _get(
                "Get a team member", ref("TeamMember"), [_param("teamMemberId")], [*GET_ERRORS, 404]
            )
        },
        "/v1/webhooks": {
            "get": _get("List webhooks", page("webhooks", "Webhook"), [cursor], [*GET_ERRORS, 400]),
            "post": _write(
                "Create a webhook",
                {**webhook_body, "required": ["name", "url", "event_types"]},
                201,
                created,
                [],
                WRITE_ERRORS,
            ),
        },
        "/v1/webhooks/{webhookId}": {
            "get": _get(
                "Get a webhook with a page of delivery logs (newest first)",
                obj(
                    {
                        "webhook": ref("Webhook"),
                        "logs": {"type": "array", "items": ref("LogEntry"), "maxItems": 50},
                        "log_count": INT,
                        "cursor": CURSOR,
                    }
                ),
                [_param("webhookId"), cursor],
                [*GET_ERRORS, 400, 404],
            ),
            "patch": _write(
                "Update a webhook",
                webhook_body,
                200,
                msg,
                [_param("webhookId")],
                [*WRITE_ERRORS, 404],
            ),
            "delete": _write(
                "Delete a webhook", None, 204, None, [_param("webhookId")], [401, 403, 404]
            ),
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Drone Operations Service API (drone-ops-sync simulator)",
            "version": "1",
            "description": "Decisions where the spec is silent: docs/api-assumptions.md.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Project": PROJECT,
                "Job": JOB,
                "JobType": JOB_TYPE,
                "TeamMember": MEMBER,
                "TeamMemberRow": MEMBER_ROW,
                "Webhook": WEBHOOK,
                "LogEntry": LOG,
                "Creator": HUMAN,
                "WebhookCreator": WEBHOOK_HUMAN,
                "ApiKeyCreator": API_KEY,
                "Error": ERROR,
                "Message": obj({"message": STR}),
                "Created": obj({"id": STR}),
                "AssignResult": obj(
                    {
                        "message": STR,
                        "results": obj({"successful": INT, "skipped": INT, "failed": INT}),
                        "pilots_assigned": {"type": "array", "items": STR},
                        "pilots_skipped": {"type": "array", "items": STR},
                        "occurrences_per_pilot": INT,
                    }
                ),
                "UnassignResult": obj(
                    {
                        "message": STR,
                        "pilots_removed": {"type": "array", "items": STR},
                        "assignments_removed": INT,
                    }
                ),
            },
        },
    }
