"""Response shapes of the OpenAPI document: exact records, so schemathesis checks every field.

Request bodies are not here: openapi.py builds them from the validator's own rules (bodies.py).
"""

from __future__ import annotations

from typing import Any

from .rules import CAPTURE_TYPES, EVENT_TYPES, FREQUENCIES, ROLES, STATUSES, WEEKS_OF_MONTH

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
BOOL: Schema = {"type": "boolean"}
DATE: Schema = {"type": "string", "format": "date"}
STATUS: Schema = {"type": "string", "enum": list(STATUSES)}
WEEKS: Schema = {"type": "integer", "enum": list(WEEKS_OF_MONTH)}

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
JOB = obj(
    {
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
        "capture_types": {
            "type": "array",
            "items": {"type": "string", "enum": list(CAPTURE_TYPES)},
            "maxItems": 20,
            "uniqueItems": True,
        },
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
)
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
        "event_types": {
            "type": "array",
            "items": {"type": "string", "enum": list(EVENT_TYPES)},
            "uniqueItems": True,
        },
        "status": {"type": "string", "enum": ["active", "disabled"]},
        "failure_count": INT,
        "created": INT,
        "updated": INT,
        "created_by": ref("WebhookCreator"),
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
CURSOR = nullable(STR)

COMPONENTS: dict[str, Schema] = {
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
    "Error": obj({"message": STR}),
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
}


def page(name: str, item: str, count: str = "count") -> Schema:
    return obj(
        {name: {"type": "array", "items": ref(item), "maxItems": 50}, count: INT, "cursor": CURSOR}
    )
