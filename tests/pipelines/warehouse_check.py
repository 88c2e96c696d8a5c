"""Independent readers for end-to-end checks: the API as a client sees it, and the warehouse.

Deliberately written without the source's own code, so a bug there cannot hide itself.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import httpx

TIMESTAMPS = {"created", "updated", "last_triggered_at"}
DATES = {"start_date", "end_date"}
JSON_ARRAYS = {"capture_types", "selected_days_of_week", "weeks_of_month", "event_types"}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def walk(client: httpx.Client, path: str, key: str, **params: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10_000):
        query = dict(params)
        if cursor:
            query["cursor"] = cursor
        page = client.get(path, params=query).raise_for_status().json()
        items.extend(page[key])
        cursor = page["cursor"]
        if cursor is None:
            return items
    raise AssertionError(f"{path} never ended")


def api_snapshot(base_url: str, api_key: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Every record of every table the sync loads, keyed by id, straight from the API."""
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30, trust_env=False) as c:
        projects = walk(c, "/v1/projects", "projects") + walk(
            c, "/v1/projects", "projects", archived="true"
        )
        jobs = [job for p in projects for job in walk(c, f"/v1/projects/{p['id']}/jobs", "jobs")]
        webhooks: list[dict[str, Any]] = []
        logs: list[dict[str, Any]] = []
        for hook in walk(c, "/v1/webhooks", "webhooks"):
            cursor = None
            for _ in range(10_000):
                page = (
                    c.get(f"/v1/webhooks/{hook['id']}", params={"cursor": cursor} if cursor else {})
                    .raise_for_status()
                    .json()
                )
                if cursor is None:
                    webhooks.append(page["webhook"])
                logs.extend({**entry, "webhook_id": hook["id"]} for entry in page["logs"])
                cursor = page["cursor"]
                if cursor is None:
                    break
        return {
            "projects": {p["id"]: p for p in projects},
            "jobs": {j["id"]: j for j in jobs},
            "team_members": {m["id"]: m for m in walk(c, "/v1/team", "team")},
            "job_types": {t["id"]: t for t in walk(c, "/v1/job-types", "job_types")},
            "webhooks": {w["id"]: w for w in webhooks},
            "webhook_deliveries": {e["id"]: e for e in logs},
        }


Warehouse = Path | str
"""A DuckDB file, or a PostgreSQL connection string (`postgresql://...`)."""


def query(database: Warehouse, sql: str) -> list[dict[str, Any]]:
    """Rows as dicts, from DuckDB or PostgreSQL (the same SQL runs on both)."""
    if isinstance(database, str):
        return _query_postgres(database, sql)
    con = duckdb.connect(str(database))
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def _query_postgres(dsn: str, sql: str) -> list[dict[str, Any]]:
    import psycopg2

    connection = psycopg2.connect(dsn, connect_timeout=10)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            names = [d[0] for d in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()


def current_rows(
    database: Warehouse, table: str, dataset: str = "drone_ops"
) -> dict[str, dict[str, Any]]:
    where = "" if table in ("webhook_deliveries", "users") else " WHERE _dlt_valid_to IS NULL"
    rows = query(database, f"SELECT * FROM {dataset}.{table}{where}")
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows), f"{table}: an id has more than one current row"
    return by_id


def expected_value(field: str, value: Any) -> Any:
    if value is None:
        return None
    if field in TIMESTAMPS:
        return EPOCH + timedelta(milliseconds=value)
    if field in DATES:
        return date.fromisoformat(value)
    return value


def stored_value(field: str, value: Any) -> Any:
    """A warehouse value as the API would show it: JSON arrays are text in DuckDB and
    arrive parsed from PostgreSQL's jsonb; whole-number floats compare equal either way."""
    if isinstance(value, str) and field in JSON_ARRAYS:
        return json.loads(value)
    return value


def mismatches(api: dict[str, dict[str, Any]], stored: dict[str, dict[str, Any]]) -> list[str]:
    """Every difference between API records and warehouse rows (ids and every field)."""
    problems = []
    if set(api) != set(stored):
        problems.append(
            f"ids only in API: {sorted(set(api) - set(stored))[:5]},"
            f" only in warehouse: {sorted(set(stored) - set(api))[:5]}"
        )
    for entity_id in set(api) & set(stored):
        record, row = api[entity_id], stored[entity_id]
        for field, value in record.items():
            if field == "created_by":
                want = value["id"] if isinstance(value, dict) else None
                got = row.get("created_by_id")
            else:
                want, got = expected_value(field, value), stored_value(field, row.get(field))
            if want != got:
                problems.append(f"{entity_id}.{field}: API {want!r} != warehouse {got!r}")
    return problems
