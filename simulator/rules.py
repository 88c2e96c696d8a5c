"""Request rules, declared once: the validator enforces them and the OpenAPI document shows them.

A `Field` is one body field's JSON type, nullability and limits, with the messages the
validator answers (part 7's words where the spec gives them, the same style elsewhere). A
`Cross` is a rule that JSON Schema cannot state, between two fields or between a field and the
workspace (the current record on PATCH, today's date, the configured job types): the validator
runs its check and the document prints its text in the body's description. A `Body` lists a
request body's steps in the order the validator runs them; the first failing step answers.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

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
DAYS_OF_WEEK = (0, 1, 2, 3, 4, 5, 6)
ROLES = ("root", "project_manager", "ops_lead", "pilot", "client")
EVENT_TYPES = ("project.created", "project.updated")
WEBHOOK_STATUSES = ("active", "disabled")

STATUS_MESSAGE = "status must be one of: " + ", ".join(STATUSES)
OTHER_REASON_REQUIRED = 'other_status_reason is required when status is "other"'
DATE_PATTERN = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
# an http(s) URL: a host name or IPv4 address, an optional port (0 to 65535), then an optional
# path, query or fragment of printable ASCII
_PORT = r"6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}"
URL_PATTERN = (
    r"https?://[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?" rf"(?::(?:{_PORT}))?(?:[/?#][!-~]*)?"
)
URL_MAX = 2048


def parse_date(value: Any) -> date | None:
    """A strict `YYYY-MM-DD` calendar date, or None when the value is not one."""
    if not isinstance(value, str) or not re.fullmatch(DATE_PATTERN, value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def six_months_before(d: date) -> date:
    """Calendar six months earlier, clamped to the month's last day."""
    total = d.year * 12 + d.month - 1 - 6
    y, m = total // 12, total % 12 + 1
    return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@dataclass(frozen=True)
class Field:
    """One body field: what JSON it takes, and what the validator answers when it does not.

    `messages` has one entry per kind of check the field makes: "type", "length", "format",
    "pattern", "enum", "range", "count" (of array items), "items", "unique", "required".
    """

    name: str
    type: str  # string, integer, number, boolean or array
    messages: Mapping[str, str]
    nullable: bool = False
    format: str | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[Any, ...] | None = None
    item_type: str | None = None
    item_enum: tuple[Any, ...] | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False
    description: str = ""

    def problem(self, value: Any) -> str | None:
        """The message for the first rule a non-null `value` breaks, or None."""
        m = self.messages
        if self.type == "string":
            if not isinstance(value, str):
                return m["type"]
            if (self.min_length is not None and len(value) < self.min_length) or (
                self.max_length is not None and len(value) > self.max_length
            ):
                return m["length"]
            if self.format == "date" and parse_date(value) is None:
                return m["format"]
            if self.pattern is not None and not re.fullmatch(self.pattern, value):
                return m["pattern"]
        elif self.type == "boolean":
            if not isinstance(value, bool):
                return m["type"]
        elif self.type in ("integer", "number"):
            ok = _is_int(value) if self.type == "integer" else _is_number(value)
            if not ok:
                return m["type"]
            if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum
            ):
                return m["range"]
        elif self.type == "array":
            return self._array_problem(value)
        if self.enum is not None and value not in self.enum:
            return m["enum"]
        return None

    def _array_problem(self, value: Any) -> str | None:
        m = self.messages
        if not isinstance(value, list):
            return m["type"]
        if (self.min_items is not None and len(value) < self.min_items) or (
            self.max_items is not None and len(value) > self.max_items
        ):
            return m["count"]
        for item in value:
            if self.item_type == "string" and not isinstance(item, str):
                return m["items"]
            if self.item_type == "integer" and not _is_int(item):
                return m["items"]
            if self.item_enum is not None and item not in self.item_enum:
                return m["items"]
        if self.unique and len(set(value)) != len(value):
            return m["unique"]
        return None

    def schema(self) -> dict[str, Any]:
        """The field's JSON Schema (OpenAPI 3.0): every limit the validator checks."""
        out: dict[str, Any] = {"type": self.type}
        if self.type == "string":
            if self.format == "date":
                out["format"] = "date"
            if self.pattern is not None:
                out["pattern"] = f"^(?:{self.pattern})$"
            if self.min_length is not None:
                out["minLength"] = self.min_length
            if self.max_length is not None:
                out["maxLength"] = self.max_length
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.type == "array":
            items: dict[str, Any] = {"type": self.item_type}
            if self.item_enum is not None:
                items["enum"] = list(self.item_enum)
            out["items"] = items
            if self.min_items is not None:
                out["minItems"] = self.min_items
            if self.max_items is not None:
                out["maxItems"] = self.max_items
            if self.unique:
                out["uniqueItems"] = True
        if self.nullable:
            out["nullable"] = True
        if self.description:
            out["description"] = self.description
        return out


@dataclass
class Context:
    """What a cross rule may look at besides the body."""

    current: Mapping[str, Any] | None = None  # the record a PATCH changes
    today: date = field(default_factory=date.today)
    job_types: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Cross:
    """A rule JSON Schema cannot state; `text` is what the OpenAPI document says about it."""

    name: str
    text: str
    check: Callable[[Mapping[str, Any], Context], str | None]


Step = Field | Cross


@dataclass(frozen=True)
class Body:
    """A request body: its steps in validation order and the fields creation requires."""

    steps: tuple[Step, ...]
    required: tuple[str, ...] = ()

    @property
    def fields(self) -> dict[str, Field]:
        return {s.name: s for s in self.steps if isinstance(s, Field)}

    @property
    def cross(self) -> list[Cross]:
        return [s for s in self.steps if isinstance(s, Cross)]

    def first_problem(self, body: Mapping[str, Any], ctx: Context) -> str | None:
        """The message of the first step `body` fails, or None when it passes them all.

        A required field that is missing or null answers its "required" message; a nullable
        field's null means "not given" (or "clear it", on PATCH); unknown fields are ignored.
        """
        for step in self.steps:
            if isinstance(step, Cross):
                message = step.check(body, ctx)
                if message is not None:
                    return message
                continue
            name = step.name
            if name in self.required and body.get(name) is None:
                return step.messages.get("required", f"{name} is required")
            if name not in body:
                continue
            value = body[name]
            if value is None:
                if step.nullable:
                    continue
                return step.messages["type"]
            message = step.problem(value)
            if message is not None:
                return message
        return None


# -- field builders (the message conventions in one place) -----------------------------------
def text(
    name: str,
    lo: int | None,
    hi: int,
    *,
    between: bool = False,
    nullable: bool = False,
    description: str = "",
) -> Field:
    """A string with a length limit; `between` answers one 'between lo and hi' message."""
    if between:
        msg = f"{name} must be between {lo} and {hi} characters"
        messages = {"type": msg, "length": msg}
    else:
        messages = {
            "type": f"{name} must be a string",
            "length": f"{name} must not exceed {hi} characters",
        }
    return Field(
        name,
        "string",
        {**messages, "required": f"{name} is required"},
        nullable=nullable,
        min_length=lo,
        max_length=hi,
        description=description,
    )


def choice(
    name: str,
    values: tuple[Any, ...],
    *,
    message: str | None = None,
    nullable: bool = False,
    description: str = "",
) -> Field:
    msg = message or f"{name} must be one of: " + ", ".join(str(v) for v in values)
    kind = "integer" if all(_is_int(v) for v in values) else "string"
    return Field(
        name,
        kind,
        {"type": msg, "enum": msg, "required": f"{name} is required"},
        nullable=nullable,
        enum=values,
        description=description,
    )


def iso_date(name: str, *, nullable: bool = False, description: str = "") -> Field:
    msg = f"{name} must be a valid ISO date string"
    return Field(
        name,
        "string",
        {"type": msg, "format": msg, "required": f"{name} is required"},
        nullable=nullable,
        format="date",
        description=description,
    )


def bounded(name: str, kind: str, lo: float, hi: float, *, description: str = "") -> Field:
    """A nullable number or integer in [lo, hi]; any other value answers the range message."""
    msg = f"{name} must be between {lo:g} and {hi:g}"
    return Field(
        name,
        kind,
        {"type": msg, "range": msg},
        nullable=True,
        minimum=lo,
        maximum=hi,
        description=description,
    )


def int_list(name: str, values: tuple[int, ...], most: int, *, unique: bool) -> Field:
    messages = {
        "type": f"{name} must be an array",
        "count": f"{name} must not exceed {most} values",
        "items": f"{name} values must be one of: " + ", ".join(str(v) for v in values),
        "unique": f"{name} must not contain duplicates",
    }
    return Field(
        name,
        "array",
        messages,
        nullable=True,
        item_type="integer",
        item_enum=values,
        max_items=most,
        unique=unique,
    )


def pilots(required_message: str) -> Field:
    return Field(
        "pilots",
        "array",
        {
            "type": required_message,
            "count": required_message,
            "items": "pilots must be an array of strings",
            "required": required_message,
        },
        item_type="string",
        min_items=1,
        description="Team member ids with role pilot; duplicates count once.",
    )
