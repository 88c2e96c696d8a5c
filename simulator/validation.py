"""Request validation with the spec's part 7 messages and part 8 limits.

Messages the spec gives are used word for word; rules without a given message get one in the
same style. Checks run in the order of the spec's tables so that the first failing rule wins.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlsplit

STATUSES = (
    "draft",
    "not_started",
    "planned",
    "in_progress",
    "completed",
    "on_hold",
    "weather_delayed",
    "technical_issues",
    "cancelled",
    "aborted",
    "other",
)
PRIORITIES = ("low", "medium", "high")
JOB_PATTERNS = ("one_time", "recurring")
FREQUENCIES = ("daily", "weekly", "monthly", "yearly", "flexible")
CAPTURE_TYPES = (
    "drone_inspection",
    "thermal_inspection",
    "video_capture",
    "3d_mapping",
    "lidar_scan",
    "orthomosaic",
    "ground_smartphone",
    "ground_360",
    "panorama",
)
WEEKS_OF_MONTH = (1, 2, 3, 4, -1)
ROLES = ("root", "project_manager", "ops_lead", "pilot", "client")
EVENT_TYPES = ("project.created", "project.updated")
WEBHOOK_STATUSES = ("active", "disabled")

STATUS_MESSAGE = "status must be one of: " + ", ".join(STATUSES)
OTHER_REASON_REQUIRED = 'other_status_reason is required when status is "other"'
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ApiError(Exception):
    """An error answered as `{message}` with the given HTTP status."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def bad(message: str) -> ApiError:
    return ApiError(400, message)


def parse_date(value: Any) -> date | None:
    """A strict `YYYY-MM-DD` date, or None when the value is not one."""
    if not isinstance(value, str) or not _DATE_RE.match(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def today_utc() -> date:
    return datetime.now(UTC).date()


def six_months_before(d: date) -> date:
    """Calendar six months earlier, clamped to the month's last day."""
    total = d.year * 12 + d.month - 1 - 6
    y, m = total // 12, total % 12 + 1
    return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _opt_str(body: dict[str, Any], name: str, max_len: int) -> None:
    """Optional nullable string with a maximum length."""
    if name not in body or body[name] is None:
        return
    v = body[name]
    if not isinstance(v, str):
        raise bad(f"{name} must be a string")
    if len(v) > max_len:
        raise bad(f"{name} must not exceed {max_len} characters")


def _len_between(body: dict[str, Any], name: str, lo: int, hi: int) -> None:
    v = body[name]
    if not isinstance(v, str):
        raise bad(f"{name} must be a string")
    if not lo <= len(v) <= hi:
        raise bad(f"{name} must be between {lo} and {hi} characters")


def _status_and_reason(body: dict[str, Any]) -> None:
    if "status" in body:
        if body["status"] not in STATUSES:
            raise bad(STATUS_MESSAGE)
        if body["status"] == "other":
            reason = body.get("other_status_reason")
            if reason is None or reason == "":
                raise bad(OTHER_REASON_REQUIRED)
    if body.get("other_status_reason") is not None:
        _len_between(body, "other_status_reason", 1, 200)


def validate_project_patch(body: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Validate a PATCH body against the current project; returns the fields to set."""
    if "name" in body and (not isinstance(body["name"], str) or not 1 <= len(body["name"]) <= 100):
        raise bad("name must be between 1 and 100 characters")
    if "description" in body:
        d = body["description"]
        if not isinstance(d, str) or not 1 <= len(d) <= 1000:
            raise bad("description must be between 1 and 1000 characters")
    start = current["start_date"]
    if "start_date" in body:
        if parse_date(body["start_date"]) is None:
            raise bad("start_date must be a valid ISO date string")
        start = body["start_date"]
    end = current["end_date"]
    if "end_date" in body:
        if body["end_date"] is not None and parse_date(body["end_date"]) is None:
            raise bad("end_date must be a valid ISO date string")
        end = body["end_date"]
    if end is not None and end <= start:
        raise bad("end_date must be after start_date")
    _status_and_reason(body)
    if "external_id" in body and body["external_id"] is not None:
        if not isinstance(body["external_id"], str):
            raise bad("external_id must be a string")
        if len(body["external_id"]) > 255:
            raise bad("external_id must not exceed 255 characters")
    _opt_str(body, "laanc_number", 100)
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
        if "other_status_reason" in body and body["other_status_reason"] is not None:
            out["other_status_reason"] = body["other_status_reason"]
    else:
        out["other_status_reason"] = None
    return out


def validate_project_create(body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/projects (our path): name, description and start_date are required."""
    for name in ("name", "description", "start_date"):
        if body.get(name) is None:
            raise bad(f"{name} is required")
    blank = {
        "status": "not_started",
        "start_date": body["start_date"],
        "end_date": None,
    }
    if parse_date(body["start_date"]) is None:
        raise bad("start_date must be a valid ISO date string")
    fields = validate_project_patch(body, blank)
    fields.setdefault("status", "not_started")
    fields.setdefault("end_date", None)
    fields.setdefault("external_id", None)
    fields.setdefault("laanc_number", None)
    fields.setdefault("other_status_reason", None)
    return fields


def validate_archive(body: dict[str, Any]) -> bool:
    v = body.get("archived")
    if not isinstance(v, bool):
        raise bad("archived must be a boolean")
    return v


def validate_job_type(body: dict[str, Any]) -> tuple[str, str]:
    if body.get("name") is None:
        raise bad("name is required")
    name = body["name"]
    if not isinstance(name, str) or not 1 <= len(name) <= 50:
        raise bad("name must be between 1 and 50 characters")
    icon = body.get("icon")
    if icon is None:
        icon = "settings"
    if not isinstance(icon, str):
        raise bad("icon must be a string")
    if len(icon) > 20:
        raise bad("icon must be less than 20 characters")
    return name, icon


def _int_list(
    body: dict[str, Any], name: str, allowed: tuple[int, ...], max_items: int, no_dups: bool
) -> None:
    v = body.get(name)
    if v is None:
        return
    if not isinstance(v, list):
        raise bad(f"{name} must be an array")
    if len(v) > max_items:
        raise bad(f"{name} must not exceed {max_items} values")
    if not all(_is_int(x) and x in allowed for x in v):
        raise bad(f"{name} values must be one of: " + ", ".join(str(a) for a in allowed))
    if no_dups and len(set(v)) != len(v):
        raise bad(f"{name} must not contain duplicates")


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
    cur = current or {}
    if creating and body.get("name") is None:
        raise bad("name is required")
    if "name" in body and (not isinstance(body["name"], str) or not 1 <= len(body["name"]) <= 100):
        raise bad("name must be between 1 and 100 characters")
    if creating and body.get("type") is None:
        raise bad("type is required")
    if "type" in body and (not isinstance(body["type"], str) or body["type"] not in job_types):
        raise bad("type must match a configured job type")
    if (creating or "job_pattern" in body) and body.get("job_pattern") not in JOB_PATTERNS:
        raise bad("job_pattern must be one_time or recurring")
    if creating and body.get("start_date") is None:
        raise bad("start_date is required")
    start = cur.get("start_date")
    if "start_date" in body:
        sd = parse_date(body["start_date"])
        if sd is None:
            raise bad("start_date must be a valid ISO date string")
        if sd < six_months_before(today or today_utc()):
            raise bad("start_date must not be more than 6 months in the past")
        start = body["start_date"]
    end = cur.get("end_date")
    if "end_date" in body:
        if body["end_date"] is not None and parse_date(body["end_date"]) is None:
            raise bad("end_date must be a valid ISO date string")
        end = body["end_date"]
    if end is not None and start is not None and end < start:
        raise bad("end_date must be on or after start_date")
    if "status" in body and body["status"] is None and creating:
        body = {k: v for k, v in body.items() if k != "status"}
    _status_and_reason(body)
    if body.get("priority") is not None and body["priority"] not in PRIORITIES:
        raise bad("priority must be one of: low, medium, high")
    _opt_str(body, "description", 1000)
    lat, lon = body.get("latitude"), body.get("longitude")
    if lat is not None and (not _is_number(lat) or not -90 <= lat <= 90):
        raise bad("latitude must be between -90 and 90")
    if lon is not None and (not _is_number(lon) or not -180 <= lon <= 180):
        raise bad("longitude must be between -180 and 180")
    if ("latitude" in body or "longitude" in body) and (lat is None) != (lon is None):
        raise bad("latitude and longitude must be provided together")
    if "external_id" in body and body["external_id"] is not None:
        if not isinstance(body["external_id"], str):
            raise bad("external_id must be a string")
        if len(body["external_id"]) > 255:
            raise bad("external_id must not exceed 255 characters")
    _opt_str(body, "inspection_notes", 2000)
    ct = body.get("capture_types")
    if ct is not None:
        if not isinstance(ct, list):
            raise bad("capture_types must be an array")
        if len(ct) > 20:
            raise bad("capture_types must not exceed 20 items")
        if not all(isinstance(x, str) and x in CAPTURE_TYPES for x in ct):
            raise bad("capture_types must contain only: " + ", ".join(CAPTURE_TYPES))
        if len(set(ct)) != len(ct):
            raise bad("capture_types must not contain duplicates")
    freq = body.get("recurring_frequency", cur.get("recurring_frequency"))
    if body.get("recurring_frequency") is not None and freq not in FREQUENCIES:
        raise bad("recurring_frequency must be one of: " + ", ".join(FREQUENCIES))
    interval = body.get("recurring_interval")
    if interval is not None and (not _is_int(interval) or not 1 <= interval <= 365):
        raise bad("recurring_interval must be between 1 and 365")
    if freq == "flexible" and body.get("recurring_interval", cur.get("recurring_interval")):
        raise bad("recurring_interval cannot be used with flexible frequency")
    _int_list(body, "selected_days_of_week", (0, 1, 2, 3, 4, 5, 6), 7, no_dups=False)
    _int_list(body, "weeks_of_month", WEEKS_OF_MONTH, 5, no_dups=True)
    wom = body.get("week_of_month")
    if wom is not None and (not _is_int(wom) or wom not in WEEKS_OF_MONTH):
        raise bad("week_of_month must be one of: 1, 2, 3, 4, -1")
    fpo = body.get("flights_per_occurrence")
    if fpo is not None and (not _is_int(fpo) or not 1 <= fpo <= 10):
        raise bad("flights_per_occurrence must be between 1 and 10")
    return _job_fields(body, cur, creating)


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


def validate_pilots(body: dict[str, Any], message: str) -> list[str]:
    pilots = body.get("pilots")
    if not isinstance(pilots, list) or not pilots:
        raise bad(message)
    if not all(isinstance(p, str) for p in pilots):
        raise bad("pilots must be an array of strings")
    return list(dict.fromkeys(pilots))


def _valid_url(v: Any) -> bool:
    if not isinstance(v, str) or len(v) > 2048:
        return False
    parts = urlsplit(v)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def validate_webhook(body: dict[str, Any], creating: bool) -> dict[str, Any]:
    """Webhook create/update (our paths): name, url, event_types, status."""
    if creating:
        for name in ("name", "url", "event_types"):
            if body.get(name) is None:
                raise bad(f"{name} is required")
    if "name" in body and (not isinstance(body["name"], str) or not 1 <= len(body["name"]) <= 100):
        raise bad("name must be between 1 and 100 characters")
    if "url" in body and not _valid_url(body["url"]):
        raise bad("url must be a valid http or https URL")
    if "event_types" in body:
        et = body["event_types"]
        if (
            not isinstance(et, list)
            or not et
            or not all(isinstance(e, str) and e in EVENT_TYPES for e in et)
            or len(set(et)) != len(et)
        ):
            raise bad(
                "event_types must be a non-empty array of distinct values from: "
                + ", ".join(EVENT_TYPES)
            )
    if "status" in body and body["status"] not in WEBHOOK_STATUSES:
        raise bad("status must be one of: " + ", ".join(WEBHOOK_STATUSES))
    out = {k: body[k] for k in ("name", "url", "event_types", "status") if k in body}
    if creating:
        out.setdefault("status", "active")
    return out
