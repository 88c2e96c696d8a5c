"""Request validation: the rules of bodies.py applied, and the fields each request stores.

Messages the spec gives are used word for word; rules without a given message get one in the
same style. Checks run in the order bodies.py lists them, so the first failing rule wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from .bodies import (
    ARCHIVE,
    ASSIGN,
    JOB,
    JOB_PATCH,
    JOB_TYPE,
    PROJECT_CREATE,
    PROJECT_PATCH,
    UNASSIGN,
    WEBHOOK_CREATE,
    WEBHOOK_PATCH,
)
from .rules import Body, Context, Field


class ApiError(Exception):
    """An error answered as `{message}` with the given HTTP status."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def bad(message: str) -> ApiError:
    return ApiError(400, message)


def today_utc() -> date:
    return datetime.now(UTC).date()


def check(body: Mapping[str, Any], rules: Body, ctx: Context | None = None) -> None:
    """Raise 400 with the first rule `body` breaks."""
    message = rules.first_problem(body, ctx or Context(today=today_utc()))
    if message is not None:
        raise bad(message)


def check_query(value: str | None, rule: Field) -> str | None:
    """A query parameter's value, None when absent or empty (the default applies); 400 when
    it breaks its rule."""
    if not value:
        return None
    message = rule.problem(value)
    if message is not None:
        raise bad(message)
    return value


def validate_project_patch(body: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Validate a PATCH body against the current project; returns the fields to set."""
    check(body, PROJECT_PATCH, Context(current=current, today=today_utc()))
    fields = (
        "name",
        "description",
        "status",
        "start_date",
        "end_date",
        "external_id",
        "laanc_number",
    )
    out = {k: body[k] for k in fields if k in body}
    status = out.get("status", current["status"])
    if status == "other":
        if body.get("other_status_reason") is not None:
            out["other_status_reason"] = body["other_status_reason"]
    else:
        out["other_status_reason"] = None
    return out


def validate_project_create(body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/projects (our path): name, description and start_date are required."""
    check(body, PROJECT_CREATE)
    blank = {"status": "not_started", "start_date": body["start_date"], "end_date": None}
    fields = validate_project_patch(body, blank)
    fields.setdefault("status", "not_started")
    fields.setdefault("end_date", None)
    fields.setdefault("external_id", None)
    fields.setdefault("laanc_number", None)
    fields.setdefault("other_status_reason", None)
    return fields


def validate_archive(body: dict[str, Any]) -> bool:
    check(body, ARCHIVE)
    return bool(body["archived"])


def validate_job_type(body: dict[str, Any]) -> tuple[str, str]:
    check(body, JOB_TYPE)
    icon = body.get("icon")
    return body["name"], "settings" if icon is None else icon


def validate_job(
    body: dict[str, Any],
    job_types: set[str],
    *,
    current: dict[str, Any] | None = None,
    today: date | None = None,
) -> dict[str, Any]:
    """Validate a job creation body, or a PATCH body when `current` is given.

    Returns the job fields to store; recurring fields are null on a one-time job.
    """
    creating = current is None
    ctx = Context(current=current, today=today or today_utc(), job_types=frozenset(job_types))
    check(body, JOB if creating else JOB_PATCH, ctx)
    return _job_fields(body, current or {}, creating)


_JOB_PLAIN = (
    "name",
    "type",
    "job_pattern",
    "start_date",
    "end_date",
    "status",
    "priority",
    "description",
    "latitude",
    "longitude",
    "external_id",
    "inspection_notes",
    "capture_types",
)
RECURRING_FIELDS = (
    "recurring_frequency",
    "recurring_interval",
    "selected_days_of_week",
    "week_of_month",
    "weeks_of_month",
    "flights_per_occurrence",
)


def _job_fields(body: dict[str, Any], cur: dict[str, Any], creating: bool) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "status": "not_started",
        "priority": "medium",
        "description": None,
        "end_date": None,
        "latitude": None,
        "longitude": None,
        "external_id": None,
        "inspection_notes": None,
        "capture_types": [],
        "other_status_reason": None,
    }
    out: dict[str, Any] = dict(defaults) if creating else {}
    for k in _JOB_PLAIN:
        if k in body and (body[k] is not None or k not in ("status", "priority")):
            out[k] = body[k]
    if out.get("capture_types", cur.get("capture_types")) is None:
        out["capture_types"] = []
    if isinstance(out.get("latitude"), int) and out["latitude"] is not None:
        out["latitude"] = float(out["latitude"])
    if isinstance(out.get("longitude"), int) and out["longitude"] is not None:
        out["longitude"] = float(out["longitude"])
    status = out.get("status", cur.get("status"))
    if status == "other":
        if body.get("other_status_reason") is not None:
            out["other_status_reason"] = body["other_status_reason"]
    else:
        out["other_status_reason"] = None
    pattern = out.get("job_pattern", cur.get("job_pattern"))
    for k in RECURRING_FIELDS:
        if pattern != "recurring":
            out[k] = None
        elif k in body:
            out[k] = body[k]
        elif creating:
            out[k] = None
    return out


def validate_pilots(body: dict[str, Any], assign: bool) -> list[str]:
    check(body, ASSIGN if assign else UNASSIGN)
    return list(dict.fromkeys(body["pilots"]))


def validate_webhook(body: dict[str, Any], creating: bool) -> dict[str, Any]:
    """Webhook create/update (our paths): name, url, event_types, status."""
    check(body, WEBHOOK_CREATE if creating else WEBHOOK_PATCH)
    out = {k: body[k] for k in ("name", "url", "event_types", "status") if k in body}
    if creating:
        out.setdefault("status", "active")
    return out
