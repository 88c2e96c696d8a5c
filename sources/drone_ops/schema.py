"""The shape of each warehouse table: column kinds, Arrow types and dlt hints.

Declared once here so that the transforms, the resources and the docs agree
(docs/warehouse.md is the human-readable version of this module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
from dlt.common.schema.typing import TColumnSchema

from . import settings

ColumnKind = Literal["str", "int", "float", "bool", "ts", "date", "json"]

ARROW_TYPES: dict[ColumnKind, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    # µs keeps every API millisecond exactly and maps to TIMESTAMP WITH TIME ZONE in DuckDB
    "ts": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "json": pa.string(),
}


@dataclass(frozen=True)
class Column:
    name: str
    kind: ColumnKind


def _cols(spec: str) -> tuple[Column, ...]:
    """Parses 'name:kind name:kind ...' so table specs stay one readable line each."""
    columns = []
    for item in spec.split():
        name, kind = item.split(":")
        columns.append(Column(name, kind))  # type: ignore[arg-type]
    return tuple(columns)


TABLE_COLUMNS: dict[str, tuple[Column, ...]] = {
    "projects": _cols(
        "id:str name:str description:str status:str other_status_reason:str start_date:date"
        " end_date:date created:ts updated:ts archived:bool external_id:str laanc_number:str"
        " created_by_id:str"
    ),
    "jobs": _cols(
        "id:str project_id:str name:str description:str type:str status:str"
        " other_status_reason:str priority:str job_pattern:str start_date:date end_date:date"
        " latitude:float longitude:float inspection_notes:str capture_types:json"
        " external_id:str created:ts updated:ts recurring_frequency:str recurring_interval:int"
        " selected_days_of_week:json week_of_month:int weeks_of_month:json"
        " flights_per_occurrence:int"
    ),
    "job_types": _cols("id:str name:str icon:str is_predefined:bool"),
    "team_members": _cols(
        "id:str email:str first_name:str last_name:str role:str status:str title:str"
        " phone_number:str profile_picture:str created:ts updated:ts"
    ),
    "webhooks": _cols(
        "id:str name:str url:str event_types:json status:str failure_count:int created:ts"
        " updated:ts last_triggered_at:ts created_by_id:str"
    ),
    "webhook_deliveries": _cols(
        "id:str webhook_id:str event_type:str url:str status:str response_status:int"
        " response_body:str request_payload:str duration_ms:int error_message:str created:ts"
        " delivery_id:str event:str event_timestamp:ts workspace_id:str data:json"
    ),
    "users": _cols(
        "id:str kind:str email:str first_name:str last_name:str profile_picture:str"
        " display_name:str first_seen_at:ts last_seen_at:ts _row_hash:str"
    ),
    settings.ISSUES_TABLE: _cols(
        "run_id:str table_name:str record_id:str field:str value:str problem:str"
    ),
}

# Values checked against the spec after typing; a breach is recorded, never dropped.
ENUM_CHECKS: dict[str, dict[str, tuple[str, ...]]] = {
    "projects": {"status": settings.STATUSES},
    "jobs": {
        "status": settings.STATUSES,
        "priority": settings.PRIORITIES,
        "job_pattern": settings.JOB_PATTERNS,
        "recurring_frequency": settings.RECURRING_FREQUENCIES,
    },
    "team_members": {"role": settings.ROLES},
}
# Fields every record of a table carries by the spec (creation requires them, or the server
# always sets them): a record without one is loaded (nothing is dropped) and recorded.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "projects": ("name", "status", "created", "updated"),
    "jobs": ("name", "status", "type", "start_date", "created", "updated"),
    "job_types": ("name",),
    "team_members": ("email", "role"),
    "webhooks": ("name", "url", "created"),
    "webhook_deliveries": ("created",),
}
# Text lengths the spec allows (part 2 and part 8), in characters, inclusive.
LENGTH_CHECKS: dict[str, dict[str, tuple[int, int]]] = {
    "projects": {
        "name": (1, 100),
        "description": (1, 1000),
        "external_id": (0, 255),
        "laanc_number": (0, 100),
        "other_status_reason": (1, 200),
    },
    "jobs": {
        "name": (1, 100),
        "description": (0, 1000),
        "inspection_notes": (0, 2000),
        "external_id": (0, 255),
        "other_status_reason": (1, 200),
    },
    "job_types": {"name": (1, 50), "icon": (0, 20)},
}
RANGE_CHECKS: dict[str, dict[str, tuple[float, float]]] = {
    "jobs": {
        "latitude": (-90.0, 90.0),
        "longitude": (-180.0, 180.0),
        "recurring_interval": (1, 365),
        "flights_per_occurrence": (1, 10),
    },
}


def dlt_columns(table: str) -> dict[str, TColumnSchema]:
    """dlt column hints for a table: types that Arrow alone does not say (json, tz precision)."""
    hints: dict[str, TColumnSchema] = {}
    for column in TABLE_COLUMNS[table]:
        if column.kind == "json":
            hints[column.name] = {"data_type": "json", "nullable": True}
        elif column.kind == "ts":
            hints[column.name] = {
                "data_type": "timestamp",
                "timezone": True,
                "precision": 6,
                "nullable": True,
            }
        elif column.name == "id" and table != settings.ISSUES_TABLE:
            hints[column.name] = {"data_type": "text", "nullable": False}
    return hints
