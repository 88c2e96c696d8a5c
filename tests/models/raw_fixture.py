"""A small hand-made warehouse with the raw tables exactly as docs/warehouse.md describes them.

The figures the model tests assert are derived by hand from these rows (see the comments), so
the fixture is the single place to read when a figure changes.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

import duckdb

T1 = datetime(2024, 5, 1, 0, 0, tzinfo=UTC)
T2 = datetime(2024, 5, 3, 12, 0, tzinfo=UTC)
T3 = datetime(2024, 5, 10, 0, 0, tzinfo=UTC)
T4 = datetime(2024, 5, 20, 6, 0, tzinfo=UTC)

SCD2_COLUMNS = """
    _dlt_valid_from timestamp with time zone,
    _dlt_valid_to timestamp with time zone,
    _row_hash varchar,
    _sync_tombstone boolean,
    _dlt_load_id varchar not null,
    _dlt_id varchar not null
"""

DDL = {
    "projects": """
        id varchar, name varchar, description varchar, status varchar,
        other_status_reason varchar, start_date date, end_date date,
        created timestamp with time zone, updated timestamp with time zone, archived boolean,
        external_id varchar, laanc_number varchar, created_by_id varchar,"""
    + SCD2_COLUMNS,
    "jobs": """
        id varchar, project_id varchar, name varchar, description varchar, type varchar,
        status varchar, other_status_reason varchar, priority varchar, job_pattern varchar,
        start_date date, end_date date, latitude double, longitude double,
        inspection_notes varchar, capture_types json, external_id varchar,
        created timestamp with time zone, updated timestamp with time zone,
        recurring_frequency varchar, recurring_interval bigint, selected_days_of_week json,
        week_of_month bigint, weeks_of_month json, flights_per_occurrence bigint,"""
    + SCD2_COLUMNS,
    "job_types": "id varchar, name varchar, icon varchar, is_predefined boolean," + SCD2_COLUMNS,
    "team_members": """
        id varchar, email varchar, first_name varchar, last_name varchar, role varchar,
        status varchar, title varchar, phone_number varchar, profile_picture varchar,
        created timestamp with time zone, updated timestamp with time zone,"""
    + SCD2_COLUMNS,
    "webhooks": """
        id varchar, name varchar, url varchar, event_types json, status varchar,
        failure_count bigint, created timestamp with time zone, updated timestamp with time zone,
        last_triggered_at timestamp with time zone, created_by_id varchar,"""
    + SCD2_COLUMNS,
    "webhook_deliveries": """
        id varchar, webhook_id varchar, event_type varchar, url varchar, status varchar,
        response_status bigint, response_body varchar, error_message varchar,
        duration_ms bigint, created timestamp with time zone, request_payload varchar,
        delivery_id varchar, event varchar, workspace_id varchar,
        event_timestamp timestamp with time zone, data json,
        _dlt_load_id varchar not null, _dlt_id varchar not null""",
    "_webhook_events": """
        delivery_id varchar, event varchar, event_timestamp timestamp with time zone,
        workspace_id varchar, received_at timestamp with time zone, signed boolean,
        project_id varchar, project_updated timestamp with time zone, outcome varchar,
        payload varchar, _dlt_load_id varchar not null, _dlt_id varchar not null""",
    "users": """
        id varchar, kind varchar, email varchar, first_name varchar, last_name varchar,
        profile_picture varchar, display_name varchar,
        first_seen_at timestamp with time zone, last_seen_at timestamp with time zone,
        _dlt_load_id varchar not null, _dlt_id varchar not null""",
}


def _version(
    row: dict[str, Any], valid_from: datetime, valid_to: datetime | None
) -> dict[str, Any]:
    """Add the scd2 bookkeeping columns the way dlt fills them."""
    return {
        **row,
        "_dlt_valid_from": valid_from,
        "_dlt_valid_to": valid_to,
        "_row_hash": json.dumps(row, sort_keys=True, default=str),
        "_sync_tombstone": False,
        "_dlt_load_id": str(valid_from.timestamp()),
        "_dlt_id": f"{row['id']}@{valid_from.isoformat()}",
    }


def _project(pid: str, status: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": pid,
        "name": f"Project {pid}",
        "description": "fixture project",
        "status": status,
        "other_status_reason": None,
        "start_date": date(2024, 1, 1),
        "end_date": None,
        "created": T1,
        "updated": T1,
        "archived": False,
        "external_id": None,
        "laanc_number": None,
        "created_by_id": "u1",
    }
    row.update(kw)
    return row


def _job(jid: str, project_id: str, status: str, start: date, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": jid,
        "project_id": project_id,
        "name": f"Job {jid}",
        "description": None,
        "type": "wind_turbine",
        "status": status,
        "other_status_reason": None,
        "priority": "medium",
        "job_pattern": "recurring",
        "start_date": start,
        "end_date": None,
        "latitude": None,
        "longitude": None,
        "inspection_notes": None,
        "capture_types": json.dumps(["drone_inspection"]),
        "external_id": None,
        "created": T1,
        "updated": T1,
        "recurring_frequency": None,
        "recurring_interval": None,
        "selected_days_of_week": None,
        "week_of_month": None,
        "weeks_of_month": None,
        "flights_per_occurrence": 1,
    }
    for key in ("capture_types", "selected_days_of_week", "weeks_of_month"):
        if key in kw and kw[key] is not None:
            kw[key] = json.dumps(kw[key])
    row.update(kw)
    return row


PROJECTS = [
    # p1: planned -> weather_delayed -> (description edit, same status) -> in_progress
    _version(_project("p1", "planned"), T1, T2),
    _version(_project("p1", "weather_delayed"), T2, T3),
    _version(_project("p1", "weather_delayed", description="edited"), T3, T4),
    _version(_project("p1", "in_progress", description="edited"), T4, None),
    # p2: archived, completed, created by an API key
    _version(_project("p2", "completed", archived=True, created_by_id="k1"), T1, None),
    # p3: stuck in weather_delayed since T2, no creator
    _version(_project("p3", "weather_delayed", created=T2, created_by_id=None), T2, None),
    # p4: deleted (retired) at T3
    _version(_project("p4", "draft"), T1, T3),
]

JOBS = [
    # one_time: 1 occurrence on start, whatever the recurring fields say
    _job(
        "j1",
        "p1",
        "planned",
        date(2024, 6, 3),
        job_pattern="one_time",
        recurring_frequency="daily",
        latitude=52.5,
        longitude=13.4,
        type="cell_tower",
        capture_types=["drone_inspection", "thermal_inspection"],
        priority="high",
    ),
    # daily every 2 days, 1..10 June: 1, 3, 5, 7, 9 -> 5
    _job(
        "j2",
        "p1",
        "in_progress",
        date(2024, 6, 1),
        end_date=date(2024, 6, 10),
        recurring_frequency="daily",
        recurring_interval=2,
    ),
    # weekly Mon+Wed from Wed 5 June to 30 June: Mon 3 June is before start -> 7
    _job(
        "j3",
        "p1",
        "planned",
        date(2024, 6, 5),
        end_date=date(2024, 6, 30),
        recurring_frequency="weekly",
        selected_days_of_week=[1, 3],
    ),
    # weekly every 2 weeks, default weekday (Thu), no end: 6 June 2024 + 14k < 6 June 2025 -> 27
    _job(
        "j4",
        "p1",
        "weather_delayed",
        date(2024, 6, 6),
        recurring_frequency="weekly",
        recurring_interval=2,
    ),
    # monthly, last Friday, Jan..June 2024: 26/1, 23/2, 29/3, 26/4, 31/5, 28/6 -> 6
    _job(
        "j5",
        "p3",
        "on_hold",
        date(2024, 1, 15),
        end_date=date(2024, 6, 30),
        recurring_frequency="monthly",
        selected_days_of_week=[5],
        weeks_of_month=[-1],
    ),
    # monthly on day 31, clamped: 2024 has 12 occurrences, 29 Feb and 30 Apr among them
    _job(
        "j6",
        "p2",
        "planned",
        date(2024, 1, 31),
        end_date=date(2024, 12, 31),
        recurring_frequency="monthly",
    ),
    # yearly from 29 Feb 2024 to 1 Mar 2028: 2024-02-29, 2025/26/27-02-28, 2028-02-29 -> 5
    _job(
        "j7",
        "p2",
        "completed",
        date(2024, 2, 29),
        end_date=date(2028, 3, 1),
        recurring_frequency="yearly",
    ),
    # flexible: one occurrence without a date
    _job("j8", "p1", "not_started", date(2024, 6, 1), recurring_frequency="flexible"),
    # monthly every 3 months, 2nd Tuesday (start's weekday), no end:
    # 12/3, 11/6, 10/9, 10/12 2024, 11/3 2025 (< 12 March 2025) -> 5
    _job(
        "j10",
        "p1",
        "planned",
        date(2024, 3, 12),
        recurring_frequency="monthly",
        recurring_interval=3,
        week_of_month=2,
    ),
    # recurring without frequency: one occurrence on start
    _job("j11", "p1", "completed", date(2024, 6, 1), type="ct_custom"),
    # monthly 4th and last Monday, Feb..Apr 2024: 26/2 (both), 25/3 (both), 22/4 + 29/4 -> 4
    _job(
        "j12",
        "p3",
        "other",
        date(2024, 2, 1),
        end_date=date(2024, 4, 30),
        recurring_frequency="monthly",
        selected_days_of_week=[1],
        weeks_of_month=[4, -1],
        other_status_reason="waiting for permit",
    ),
]
JOB_VERSIONS = [_version(job, T1, None) for job in JOBS] + [
    # j9: planned -> cancelled, then deleted at T3 (retired: no current row)
    _version(_job("j9", "p1", "planned", date(2024, 6, 1)), T1, T2),
    _version(_job("j9", "p1", "cancelled", date(2024, 6, 1)), T2, T3),
]

JOB_TYPES = [
    _version(
        {"id": "wind_turbine", "name": "Wind turbine", "icon": "wind", "is_predefined": True},
        T1,
        None,
    ),
    _version(
        {"id": "cell_tower", "name": "Cell tower", "icon": "radio", "is_predefined": True}, T1, None
    ),
    _version(
        {"id": "ct_custom", "name": "Old name", "icon": "settings", "is_predefined": False}, T1, T2
    ),
    _version(
        {"id": "ct_custom", "name": "Solar roof", "icon": "sun", "is_predefined": False}, T2, None
    ),
]


def _member(mid: str, role: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": mid,
        "email": f"{mid}@example.com",
        "first_name": mid.upper(),
        "last_name": "Member",
        "role": role,
        "status": "active",
        "title": None,
        "phone_number": None,
        "profile_picture": None,
        "created": T1,
        "updated": T1,
    }
    row.update(kw)
    return row


TEAM_MEMBERS = [
    _version(_member("tm1", "pilot"), T1, None),
    _version(_member("tm2", "ops_lead"), T1, None),
    _version(_member("tm3", "client"), T1, T2),
    _version(_member("tm3", "pilot", updated=T2), T2, None),
    _version(_member("tm4", "pilot"), T1, T3),
]


def _webhook(wid: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": wid,
        "name": f"Hook {wid}",
        "url": f"https://example.com/{wid}",
        "event_types": json.dumps(["project.created", "project.updated"]),
        "status": "active",
        "failure_count": 0,
        "created": T1,
        "updated": T1,
        "last_triggered_at": T2,
        "created_by_id": "u1",
    }
    row.update(kw)
    return row


WEBHOOKS = [
    _version(_webhook("w1", failure_count=0), T1, T2),
    _version(_webhook("w1", failure_count=1, updated=T2), T2, None),
    _version(
        _webhook("w2", event_types=json.dumps(["project.created"]), created_by_id="k1"), T1, None
    ),
]


def _delivery(
    did: str, wid: str, created: datetime, status: str, duration: int, payload: str | None = None
) -> dict[str, Any]:
    parsed: dict[str, Any] | None
    if payload is None:
        parsed = {
            "delivery_id": f"dl-{did}",
            "event": "project.updated",
            "timestamp": int(created.timestamp() * 1000) - 250,
            "workspace_id": "ws1",
            "data": {"project_id": "p1", "status": "planned"},
        }
        payload = json.dumps(parsed)
    else:
        parsed = None
    return {
        "id": did,
        "webhook_id": wid,
        "event_type": "project.updated",
        "url": f"https://example.com/{wid}",
        "status": status,
        "response_status": 200 if status == "success" else 500,
        "response_body": "ok" if status == "success" else "boom",
        "error_message": None if status == "success" else "HTTP 500",
        "duration_ms": duration,
        "created": created,
        "request_payload": payload,
        "delivery_id": parsed and parsed["delivery_id"],
        "event": parsed and parsed["event"],
        "workspace_id": parsed and parsed["workspace_id"],
        "event_timestamp": parsed and datetime.fromtimestamp(parsed["timestamp"] / 1000, UTC),
        "data": parsed and json.dumps(parsed["data"]),
        "_dlt_load_id": "load1",
        "_dlt_id": f"d-{did}",
    }


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2024, 5, day, hour, minute, tzinfo=UTC)


# w1 on 1 May: 4 deliveries, 1 failed, durations 100..400 (p50 250, p95 385);
# w1 on 2 May: 2 deliveries, both fine (p50 100); w2 on 2 May: 1 failed, payload not JSON
WEBHOOK_DELIVERIES = [
    _delivery("d1", "w1", _at(1, 8), "success", 100),
    _delivery("d2", "w1", _at(1, 9), "success", 200),
    _delivery("d3", "w1", _at(1, 10), "failed", 300),
    _delivery("d4", "w1", _at(1, 23, 30), "success", 400),
    _delivery("d5", "w1", _at(2, 0, 30), "success", 50),
    _delivery("d6", "w1", _at(2, 7), "success", 150),
    _delivery("d7", "w2", _at(2, 8), "failed", 1000, payload="not json {"),
]


def _received(delivery_id: str, at: datetime, outcome: str = "applied") -> dict[str, Any]:
    return {
        "delivery_id": delivery_id,
        "event": "project.updated",
        "event_timestamp": at,
        "workspace_id": "ws1",
        "received_at": at,
        "signed": True,
        "project_id": "p1",
        "project_updated": at,
        "outcome": outcome,
        "payload": "{}",
        "_dlt_load_id": "load1",
        "_dlt_id": f"e-{delivery_id}",
    }


# the receiver got w1's d1, d2 and d4 of 1 May (not d3, whose attempt failed) and none of
# 2 May; plus one event on 2 May that no synced log entry shows (yet). So the gap report:
# w1 1 May 4 logged, 3 delivered, 3 received, 1 missed; w1 2 May 2 logged, 2 delivered, 0
# received, 2 missed; w2 not reported (nothing of it received); 1 unlogged on 2 May
WEBHOOK_EVENTS = [
    _received("dl-d1", _at(1, 8)),
    _received("dl-d2", _at(1, 9), outcome="not_newer"),
    _received("dl-d4", _at(1, 23, 31)),
    _received("dl-x9", _at(2, 12)),
]

USERS = [
    {
        "id": "u1",
        "kind": "user",
        "email": "ada@example.com",
        "first_name": "Ada",
        "last_name": "Lovelace",
        "profile_picture": None,
        "display_name": "Ada Lovelace",
        "first_seen_at": T1,
        "last_seen_at": T4,
        "_dlt_load_id": "load1",
        "_dlt_id": "u-u1",
    },
    {
        "id": "k1",
        "kind": "api_key",
        "email": None,
        "first_name": None,
        "last_name": None,
        "profile_picture": None,
        "display_name": "CI key",
        "first_seen_at": T1,
        "last_seen_at": T4,
        "_dlt_load_id": "load1",
        "_dlt_id": "u-k1",
    },
]

TABLES: dict[str, Sequence[dict[str, Any]]] = {
    "projects": PROJECTS,
    "jobs": JOB_VERSIONS,
    "job_types": JOB_TYPES,
    "team_members": TEAM_MEMBERS,
    "webhooks": WEBHOOKS,
    "webhook_deliveries": WEBHOOK_DELIVERIES,
    "_webhook_events": WEBHOOK_EVENTS,
    "users": USERS,
}


def write_raw_tables(
    con: duckdb.DuckDBPyConnection,
    schema: str,
    tables: Mapping[str, Sequence[dict[str, Any]]] = TABLES,
    ddl: Mapping[str, str] = DDL,
) -> None:
    """Create and fill the raw tables in `schema`, an existing schema's quoted qualified name
    ("catalog"."schema"); rows are inserted by column name, whatever the DDL's column order."""
    for table, rows in tables.items():
        con.execute(f'create table {schema}."{table}" ({ddl[table]})')
        columns = list(rows[0])
        placeholders = ", ".join("?" for _ in columns)
        con.executemany(
            f'insert into {schema}."{table}" ({", ".join(columns)}) values ({placeholders})',
            [[row[c] for c in columns] for row in rows],
        )


def create_raw_warehouse(path: pathlib.Path, dataset: str = "drone_ops") -> pathlib.Path:
    """Write the raw tables into a new DuckDB file, plus dlt's staging schema to ignore."""
    con = duckdb.connect(str(path))
    catalog = path.stem  # qualified: drone_ops.duckdb holds schema drone_ops, as in production
    try:
        con.execute(f'create schema "{catalog}"."{dataset}"')
        con.execute(f'create schema "{catalog}"."{dataset}_staging"')
        write_raw_tables(con, f'"{catalog}"."{dataset}"')
    finally:
        con.close()
    return path


def postgres_ddl(ddl: str) -> str:
    """DuckDB's column types in the fixture's DDL as PostgreSQL (and dlt on it) names them."""
    return re.sub(r"\bjson\b", "jsonb", re.sub(r"\bdouble\b", "double precision", ddl))


def write_postgres_tables(
    cursor: Any,
    schema: str,
    tables: Mapping[str, Sequence[dict[str, Any]]],
    ddl: Mapping[str, str],
) -> None:
    """Create and fill the raw tables in an existing PostgreSQL schema (`write_raw_tables` on
    the other adapter)."""
    for table, rows in tables.items():
        cursor.execute(f'create table "{schema}"."{table}" ({postgres_ddl(ddl[table])})')
        columns = list(rows[0])
        placeholders = ", ".join("%s" for _ in columns)
        cursor.executemany(
            f'insert into "{schema}"."{table}" ({", ".join(columns)}) values ({placeholders})',
            [[row[c] for c in columns] for row in rows],
        )


def postgres_dbt_target(server: Any, database: str = "warehouse") -> Any:
    """The dbt target of a database on a test's PostgreSQL server (`testkit.postgres`)."""
    from drone_ops_sync.pipelines.publish.dbt_build import DbtTarget

    return DbtTarget.postgres(
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.password,
        database=database,
        sslmode="disable",
    )
