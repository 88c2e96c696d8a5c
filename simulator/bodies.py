"""Every request body and query parameter of the API, as rules (see rules.py).

Field order is check order, following the spec's part 7 tables; cross-field rules sit where
both of their fields are known. The validator (validation.py) and the OpenAPI document
(openapi.py) both read these definitions, so what the document says is what the server does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .names import LISTS
from .rules import (
    CAPTURE_TYPES,
    DAYS_OF_WEEK,
    EVENT_TYPES,
    FREQUENCIES,
    JOB_PATTERNS,
    OTHER_REASON_REQUIRED,
    PRIORITIES,
    ROLES,
    STATUS_MESSAGE,
    STATUSES,
    URL_MAX,
    URL_PATTERN,
    WEBHOOK_STATUSES,
    WEEKS_OF_MONTH,
    Body,
    Context,
    Cross,
    Field,
    bounded,
    choice,
    int_list,
    iso_date,
    parse_date,
    pilots,
    six_months_before,
    text,
)


# -- cross-field rules ----------------------------------------------------------------------------
def _pair(body: Mapping[str, Any], ctx: Context) -> tuple[Any, Any]:
    """(start_date, end_date) after the request: sent values, else the current record's."""
    cur = ctx.current or {}
    start = body["start_date"] if "start_date" in body else cur.get("start_date")
    end = body["end_date"] if "end_date" in body else cur.get("end_date")
    return start, end


def _project_end_after_start(body: Mapping[str, Any], ctx: Context) -> str | None:
    start, end = _pair(body, ctx)
    if start is not None and end is not None and end <= start:
        return "end_date must be after start_date"
    return None


def _job_end_not_before_start(body: Mapping[str, Any], ctx: Context) -> str | None:
    start, end = _pair(body, ctx)
    if start is not None and end is not None and end < start:
        return "end_date must be on or after start_date"
    return None


def _other_needs_reason(body: Mapping[str, Any], _: Context) -> str | None:
    if body.get("status") == "other" and body.get("other_status_reason") in (None, ""):
        return OTHER_REASON_REQUIRED
    return None


def _recent_start(body: Mapping[str, Any], ctx: Context) -> str | None:
    start = parse_date(body.get("start_date"))
    if start is not None and start < six_months_before(ctx.today):
        return "start_date must not be more than 6 months in the past"
    return None


def _configured_type(body: Mapping[str, Any], ctx: Context) -> str | None:
    if "type" in body and body["type"] not in ctx.job_types:
        return "type must match a configured job type"
    return None


def _coordinates_together(body: Mapping[str, Any], _: Context) -> str | None:
    sent = "latitude" in body or "longitude" in body
    if sent and (body.get("latitude") is None) != (body.get("longitude") is None):
        return "latitude and longitude must be provided together"
    return None


def _no_interval_when_flexible(body: Mapping[str, Any], ctx: Context) -> str | None:
    cur = ctx.current or {}
    freq = body.get("recurring_frequency", cur.get("recurring_frequency"))
    if freq == "flexible" and body.get("recurring_interval", cur.get("recurring_interval")):
        return "recurring_interval cannot be used with flexible frequency"
    return None


PROJECT_END_AFTER_START = Cross(
    "end_after_start",
    "end_date must be after start_date; on PATCH the project's current start_date or end_date "
    "stands in for the one not sent.",
    _project_end_after_start,
)
JOB_END_NOT_BEFORE_START = Cross(
    "end_on_or_after_start",
    "end_date must be on or after start_date; on PATCH the job's current start_date or "
    "end_date stands in for the one not sent.",
    _job_end_not_before_start,
)
OTHER_NEEDS_REASON = Cross(
    "other_needs_reason",
    'status "other" needs a non-empty other_status_reason in the same request; with any other '
    "status the reason is checked, then ignored (stored as null).",
    _other_needs_reason,
)
RECENT_START = Cross(
    "recent_start",
    "start_date, when sent, is not more than 6 calendar months before today (UTC).",
    _recent_start,
)
CONFIGURED_TYPE = Cross(
    "configured_type",
    "type is the id of a job type configured in the workspace (GET /v1/job-types); the "
    "document lists the ids configured when it was served.",
    _configured_type,
)
COORDINATES_TOGETHER = Cross(
    "coordinates_together",
    "latitude and longitude are sent together: both numbers, or both null or absent.",
    _coordinates_together,
)
NO_INTERVAL_WHEN_FLEXIBLE = Cross(
    "no_interval_when_flexible",
    "recurring_interval cannot be used with recurring_frequency flexible; on PATCH the job's "
    "current frequency and interval stand in for those not sent.",
    _no_interval_when_flexible,
)

# -- fields ----------------------------------------------------------------------------------------
_STATUS = choice("status", STATUSES, message=STATUS_MESSAGE)
_REASON = text(
    "other_status_reason",
    1,
    200,
    between=True,
    nullable=True,
    description='Required (non-empty) when status is "other".',
)
_EXTERNAL_ID = text("external_id", None, 255, nullable=True, description="null clears it.")

PROJECT_PATCH = Body(
    (
        text("name", 1, 100, between=True),
        text("description", 1, 1000, between=True),
        iso_date("start_date"),
        iso_date("end_date", nullable=True, description="After start_date; null clears it."),
        PROJECT_END_AFTER_START,
        _STATUS,
        OTHER_NEEDS_REASON,
        _REASON,
        _EXTERNAL_ID,
        text("laanc_number", None, 100, nullable=True, description="null clears it."),
    )
)
PROJECT_CREATE = Body(PROJECT_PATCH.steps, required=("name", "description", "start_date"))

ARCHIVE = Body(
    (
        Field(
            "archived",
            "boolean",
            {"type": "archived must be a boolean", "required": "archived must be a boolean"},
            description="true archives, false restores.",
        ),
    ),
    required=("archived",),
)

JOB_TYPE = Body(
    (
        text("name", 1, 50, between=True),
        Field(
            "icon",
            "string",
            {"type": "icon must be a string", "length": "icon must be less than 20 characters"},
            nullable=True,
            max_length=20,
            description="Lucide icon name; absent or null means settings.",
        ),
    ),
    required=("name",),
)

_JOB_PATTERN_MESSAGE = "job_pattern must be one_time or recurring"
JOB = Body(
    (
        text("name", 1, 100, between=True),
        Field(
            "type",
            "string",
            {
                "type": "type must match a configured job type",
                "required": "type is required",
            },
        ),
        CONFIGURED_TYPE,
        Field(
            "job_pattern",
            "string",
            {
                "type": _JOB_PATTERN_MESSAGE,
                "enum": _JOB_PATTERN_MESSAGE,
                "required": _JOB_PATTERN_MESSAGE,
            },
            enum=JOB_PATTERNS,
        ),
        iso_date("start_date"),
        RECENT_START,
        iso_date("end_date", nullable=True, description="On or after start_date."),
        JOB_END_NOT_BEFORE_START,
        choice(
            "status",
            STATUSES,
            message=STATUS_MESSAGE,
            nullable=True,
            description="Default not_started; null means not given.",
        ),
        OTHER_NEEDS_REASON,
        _REASON,
        choice(
            "priority",
            PRIORITIES,
            nullable=True,
            description="Default medium; null means not given.",
        ),
        text("description", None, 1000, nullable=True),
        bounded("latitude", "number", -90, 90, description="Sent with longitude."),
        bounded("longitude", "number", -180, 180, description="Sent with latitude."),
        COORDINATES_TOGETHER,
        _EXTERNAL_ID,
        text("inspection_notes", None, 2000, nullable=True),
        Field(
            "capture_types",
            "array",
            {
                "type": "capture_types must be an array",
                "count": "capture_types must not exceed 20 items",
                "items": "capture_types must contain only: " + ", ".join(CAPTURE_TYPES),
                "unique": "capture_types must not contain duplicates",
            },
            nullable=True,
            item_type="string",
            item_enum=CAPTURE_TYPES,
            max_items=20,
            unique=True,
            description="null means none.",
        ),
        choice("recurring_frequency", FREQUENCIES, nullable=True),
        bounded("recurring_interval", "integer", 1, 365),
        NO_INTERVAL_WHEN_FLEXIBLE,
        int_list("selected_days_of_week", DAYS_OF_WEEK, 7, unique=False),
        int_list("weeks_of_month", WEEKS_OF_MONTH, 5, unique=True),
        choice("week_of_month", WEEKS_OF_MONTH, nullable=True),
        bounded("flights_per_occurrence", "integer", 1, 10),
    ),
    required=("name", "type", "job_pattern", "start_date"),
)
JOB_PATCH = Body(JOB.steps)

ASSIGN = Body((pilots("pilots array is required and must not be empty"),), ("pilots",))
UNASSIGN = Body(
    (pilots("pilots array is required and must contain at least one pilot ID"),), ("pilots",)
)

_URL_MESSAGE = "url must be a valid http or https URL"
_EVENT_TYPES_MESSAGE = "event_types must be a non-empty array of distinct values from: " + (
    ", ".join(EVENT_TYPES)
)
WEBHOOK_PATCH = Body(
    (
        text("name", 1, 100, between=True),
        Field(
            "url",
            "string",
            {"type": _URL_MESSAGE, "length": _URL_MESSAGE, "pattern": _URL_MESSAGE},
            max_length=URL_MAX,
            pattern=URL_PATTERN,
            description="Where deliveries are sent (http or https).",
        ),
        Field(
            "event_types",
            "array",
            dict.fromkeys(("type", "count", "items", "unique", "required"), _EVENT_TYPES_MESSAGE),
            item_type="string",
            item_enum=EVENT_TYPES,
            min_items=1,
            unique=True,
        ),
        choice("status", WEBHOOK_STATUSES),
    )
)
WEBHOOK_CREATE = Body(WEBHOOK_PATCH.steps, required=("name", "url", "event_types"))

# -- query parameters (an empty value counts as absent) -------------------------------------------
_STATUS_ALTERNATIVES = "|".join(STATUSES)
STATUS_FILTER = Field(
    "status",
    "string",
    {"type": STATUS_MESSAGE, "pattern": STATUS_MESSAGE},
    pattern=f"(?:{_STATUS_ALTERNATIVES})(?:,(?:{_STATUS_ALTERNATIVES}))*|",
    description="Comma-separated statuses (any matches); empty or absent: every status.",
)
ARCHIVED_FILTER = choice(
    "archived",
    ("true", "false", ""),
    message='archived must be "true" or "false"',
    description="true: archived projects only; false, empty or absent: non-archived only.",
)
ROLE_FILTER = choice(
    "role",
    (*ROLES, "all", ""),
    message="role must be one of: " + ", ".join((*ROLES, "all")),
    description="all, empty or absent: every member.",
)
CURSOR_KINDS = LISTS


def cursor_field(kind: str) -> Field:
    """The `cursor` of one list: empty, or `<list>.<created>.<id>` of the last row served."""
    return Field(
        "cursor",
        "string",
        {"type": "Invalid cursor", "pattern": "Invalid cursor"},
        pattern=cursor_pattern(kind),
        description="From the previous page of this list (opaque); empty or absent: first page.",
    )


def cursor_pattern(kind: str) -> str:
    return rf"(?:{kind}\.-?[0-9]{{1,18}}\.[A-Za-z0-9_-]{{1,64}})?"
