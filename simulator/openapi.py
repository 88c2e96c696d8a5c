"""OpenAPI 3.0 document of what the simulator implements (served at GET /openapi.json).

It describes the spec's endpoints plus the paths we decided on (docs/api-assumptions.md),
every status code each operation can answer and exact response shapes. Request bodies and
query parameters are built from the validator's own rules (bodies.py): every limit, enum,
nullability and uniqueness the server checks is in the schema, and the rules JSON Schema cannot
state (between fields, or against the workspace) are in the body's description, worded as the
validator's rules. The document is built per request, so the enum of configured job types
includes the ones created since the server started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bodies import (
    ARCHIVE,
    ARCHIVED_FILTER,
    ASSIGN,
    JOB,
    JOB_PATCH,
    JOB_TYPE,
    PROJECT_CREATE,
    PROJECT_PATCH,
    ROLE_FILTER,
    STATUS_FILTER,
    UNASSIGN,
    WEBHOOK_CREATE,
    WEBHOOK_PATCH,
    cursor_field,
)
from .names import (
    ARCHIVE_PATH,
    ASSIGN_PATH,
    JOB_PATH,
    JOB_TYPE_PATH,
    JOB_TYPES,
    JOB_TYPES_PATH,
    JOBS,
    JOBS_PATH,
    LOGS,
    MEMBER_PATH,
    PROJECT_PATH,
    PROJECTS,
    PROJECTS_PATH,
    TEAM,
    TEAM_PATH,
    UNASSIGN_PATH,
    WEBHOOK_PATH,
    WEBHOOKS,
    WEBHOOKS_PATH,
)
from .openapi_schemas import COMPONENTS, INT, STR, Schema, obj, page, ref
from .rules import Body, Field

GET_ERRORS = (401, 429, 500, 502, 503)
WRITE_ERRORS = (400, 401, 403, 413)
DELETE_ERRORS = (401, 403, 404)
_ERROR_TEXT = {
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


@dataclass(frozen=True)
class Op:
    """One operation: what it takes, what it answers, and where its answer's id leads."""

    method: str
    path: str
    op_id: str
    summary: str
    status: int
    response: Schema | None
    errors: tuple[int, ...]
    query: tuple[Field, ...] = ()
    body: Body | None = None
    body_required: bool = True
    links: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)


def _created_links(targets: dict[str, str], params: dict[str, str]) -> dict[str, Any]:
    return {name: (op, params) for name, op in targets.items()}


def _update(path: str, op_id: str, noun: str, body: Body) -> Op:
    """A PATCH: any of the body's fields, none required, and no body at all is no change."""
    summary = f"Update a {noun} (no body: no change)"
    return Op(
        "patch",
        path,
        op_id,
        summary,
        200,
        ref("Message"),
        (*WRITE_ERRORS, 404),
        body=body,
        body_required=False,
    )


_NEW_PROJECT = {"projectId": "$response.body#/id"}
_NEW_JOB = {"projectId": "$request.path.projectId", "jobId": "$response.body#/id"}
_NEW_HOOK = {"webhookId": "$response.body#/id"}
OPERATIONS: tuple[Op, ...] = (
    Op(
        "get",
        PROJECTS_PATH,
        "listProjects",
        "List projects",
        200,
        page(PROJECTS, "Project"),
        (*GET_ERRORS, 400),
        (cursor_field(PROJECTS), STATUS_FILTER, ARCHIVED_FILTER),
    ),
    Op(
        "post",
        PROJECTS_PATH,
        "createProject",
        "Create a project",
        201,
        ref("Created"),
        WRITE_ERRORS,
        body=PROJECT_CREATE,
        links=_created_links(
            {
                "GetProject": "getProject",
                "UpdateProject": "updateProject",
                "ArchiveProject": "archiveProject",
                "ListJobs": "listJobs",
                "CreateJob": "createJob",
                "DeleteProject": "deleteProject",
            },
            _NEW_PROJECT,
        ),
    ),
    Op("get", PROJECT_PATH, "getProject", "Get a project", 200, ref("Project"), (*GET_ERRORS, 404)),
    _update(PROJECT_PATH, "updateProject", "project", PROJECT_PATCH),
    Op("delete", PROJECT_PATH, "deleteProject", "Delete a project", 204, None, DELETE_ERRORS),
    Op(
        "post",
        ARCHIVE_PATH,
        "archiveProject",
        "Archive or restore",
        200,
        ref("Message"),
        (*WRITE_ERRORS, 404),
        body=ARCHIVE,
    ),
    Op(
        "get",
        JOBS_PATH,
        "listJobs",
        "List jobs",
        200,
        page(JOBS, "Job"),
        (*GET_ERRORS, 400, 404),
        (cursor_field(JOBS),),
    ),
    Op(
        "post",
        JOBS_PATH,
        "createJob",
        "Create a job",
        201,
        ref("Created"),
        (*WRITE_ERRORS, 404),
        body=JOB,
        links=_created_links(
            {
                "GetJob": "getJob",
                "UpdateJob": "updateJob",
                "DeleteJob": "deleteJob",
            },
            _NEW_JOB,
        ),
    ),
    Op("get", JOB_PATH, "getJob", "Get a job", 200, ref("Job"), (*GET_ERRORS, 404)),
    _update(JOB_PATH, "updateJob", "job", JOB_PATCH),
    Op("delete", JOB_PATH, "deleteJob", "Delete a job", 204, None, DELETE_ERRORS),
    Op(
        "post",
        ASSIGN_PATH,
        "assignPilots",
        "Assign pilots",
        200,
        ref("AssignResult"),
        (*WRITE_ERRORS, 404),
        body=ASSIGN,
    ),
    Op(
        "post",
        UNASSIGN_PATH,
        "unassignPilots",
        "Unassign pilots",
        200,
        ref("UnassignResult"),
        (*WRITE_ERRORS, 404),
        body=UNASSIGN,
    ),
    Op(
        "get",
        JOB_TYPES_PATH,
        "listJobTypes",
        "List job types",
        200,
        page(JOB_TYPES, "JobType"),
        (*GET_ERRORS, 400),
        (cursor_field(JOB_TYPES),),
    ),
    Op(
        "post",
        JOB_TYPES_PATH,
        "createJobType",
        "Create a job type",
        201,
        ref("Created"),
        WRITE_ERRORS,
        body=JOB_TYPE,
        links={"GetJobType": ("getJobType", {"jobTypeId": "$response.body#/id"})},
    ),
    Op(
        "get",
        JOB_TYPE_PATH,
        "getJobType",
        "Get a job type",
        200,
        ref("JobType"),
        (*GET_ERRORS, 404),
    ),
    Op(
        "get",
        TEAM_PATH,
        "listTeam",
        "List team members",
        200,
        page(TEAM, "TeamMemberRow"),
        (*GET_ERRORS, 400),
        (cursor_field(TEAM), ROLE_FILTER),
    ),
    Op(
        "get",
        MEMBER_PATH,
        "getTeamMember",
        "Get a team member",
        200,
        ref("TeamMember"),
        (*GET_ERRORS, 404),
    ),
    Op(
        "get",
        WEBHOOKS_PATH,
        "listWebhooks",
        "List webhooks",
        200,
        page(WEBHOOKS, "Webhook"),
        (*GET_ERRORS, 400),
        (cursor_field(WEBHOOKS),),
    ),
    Op(
        "post",
        WEBHOOKS_PATH,
        "createWebhook",
        "Create a webhook",
        201,
        ref("Created"),
        WRITE_ERRORS,
        body=WEBHOOK_CREATE,
        links=_created_links(
            {"GetWebhook": "getWebhook", "UpdateWebhook": "updateWebhook"}, _NEW_HOOK
        ),
    ),
    Op(
        "get",
        WEBHOOK_PATH,
        "getWebhook",
        "Get a webhook with a page of delivery logs (newest first)",
        200,
        obj(
            {
                "webhook": ref("Webhook"),
                LOGS: {"type": "array", "items": ref("LogEntry"), "maxItems": 50},
                "log_count": INT,
                "cursor": {"type": "string", "nullable": True},
            }
        ),
        (*GET_ERRORS, 400, 404),
        (cursor_field(LOGS),),
    ),
    _update(WEBHOOK_PATH, "updateWebhook", "webhook", WEBHOOK_PATCH),
    Op("delete", WEBHOOK_PATH, "deleteWebhook", "Delete a webhook", 204, None, DELETE_ERRORS),
)


def request_schema(body: Body, job_types: list[str]) -> Schema:
    """A body's JSON Schema from its rules; cross-field rules go in the description.

    Unknown fields are ignored by the server, so the schema allows them.
    """
    props = {name: f.schema() for name, f in body.fields.items()}
    if "type" in props and body.cross and any(c.name == "configured_type" for c in body.cross):
        props["type"] = {**props["type"], "enum": job_types}
    out: Schema = {"type": "object", "properties": props}
    if body.required:
        out["required"] = list(body.required)
    if body.cross:
        out["description"] = "Rules between fields, checked with the field rules: " + " ".join(
            c.text for c in body.cross
        )
    return out


def _json(schema: Schema) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(codes: tuple[int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in sorted(set(codes)):
        resp: dict[str, Any] = {"description": _ERROR_TEXT[c], **_json(ref("Error"))}
        if c == 429:
            resp["headers"] = {"Retry-After": {"schema": INT, "required": True}}
        out[str(c)] = resp
    return out


def _operation(op: Op, examples: dict[str, str], job_types: list[str]) -> Schema:
    params: list[Schema] = []
    for name in (part[1:-1] for part in op.path.split("/") if part.startswith("{")):
        param: Schema = {"name": name, "in": "path", "required": True, "schema": STR}
        if name in examples:
            param["example"] = examples[name]
        params.append(param)
    for q in op.query:
        params.append({"name": q.name, "in": "query", "required": False, "schema": q.schema()})
    ok: Schema = {"description": "OK"}
    if op.response is not None:
        ok.update(_json(op.response))
    if op.links:
        ok["links"] = {
            name: {"operationId": target, "parameters": parameters}
            for name, (target, parameters) in op.links.items()
        }
    out: Schema = {
        "operationId": op.op_id,
        "summary": op.summary,
        "parameters": params,
        "responses": {str(op.status): ok, **_errors(op.errors)},
    }
    if op.body is not None:
        content = _json(request_schema(op.body, job_types))
        if "pilots" in op.body.fields and "pilotId" in examples:
            content["content"]["application/json"]["example"] = {"pilots": [examples["pilotId"]]}
        out["requestBody"] = {"required": op.body_required, **content}
    return out


def build_document(
    examples: dict[str, str] | None = None, job_types: list[str] | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.0.3 document; `examples` gives real path ids so tools reach real rows,
    `job_types` the configured job type ids (the enum of a job's `type`)."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, examples or {}, job_types or [])
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
            "schemas": COMPONENTS,
        },
    }
