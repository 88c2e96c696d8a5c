"""The as-of functions held to what the warehouse held at a moment (docs/as-of.md): the
history marts built by dbt (which makes `<table>_as_of` and `<table>_changed` in its on-run-end
hook), then each function called and its rows compared, field by field, with a capture of what
the API (or the warehouse) showed then. Shared by the as-of test and the generated histories.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from drone_ops_sync.pipelines.publish.dbt_build import build_models, dbt_target
from drone_ops_sync.pipelines.run.target import Target
from tests.pipelines.warehouse_check import mismatches

Rows = Callable[[str], list[dict[str, Any]]]
"""Runs a query on the warehouse: `lambda sql: query(warehouse, sql)`, or one connection's."""

# history table -> the key column of its versions mart
HISTORY = {
    "projects": "project_id",
    "jobs": "job_id",
    "job_types": "job_type_id",
    "team_members": "team_member_id",
    "webhooks": "webhook_id",
}
MART_OF = {
    "projects": "dim_project_versions",
    "jobs": "dim_job_versions",
    "job_types": "dim_job_type_versions",
    "team_members": "dim_team_member_versions",
    "webhooks": "dim_webhook_versions",
}
# the marts' names of API fields that the marts rename (docs/data-dictionary.md)
MART_COLUMN = {
    "created": "created_at",
    "updated": "updated_at",
    "archived": "is_archived",
    "type": "job_type_id",
    "created_by": "created_by_id",
}

Capture = dict[str, dict[str, dict[str, Any]]]
"""table -> id -> the API's record."""

Changes = dict[str, tuple[str, frozenset[str] | None]]
"""id -> (change, the names of the columns that changed, or None for new and retired)."""


def as_api_fields(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A versions mart row under the API's field names, for `mismatches`."""
    renamed = {api: MART_COLUMN[api] for api in MART_COLUMN if api != "created_by"}
    fields = {api: row[mart] for api, mart in renamed.items() if mart in row}
    return {**row, **fields, "id": row[HISTORY[table]]}


def expected_changes(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], names: dict[str, str]
) -> Changes:
    """The difference of two captures, the fields named as `names` says (others as they are)."""
    changes: Changes = {}
    for entity_id in after.keys() - before.keys():
        changes[entity_id] = ("new", None)
    for entity_id in before.keys() - after.keys():
        changes[entity_id] = ("retired", None)
    for entity_id in before.keys() & after.keys():
        old, new = before[entity_id], after[entity_id]
        fields = {f for f in old.keys() | new.keys() if old.get(f) != new.get(f)}
        if fields:
            changes[entity_id] = ("changed", frozenset(names.get(f, f) for f in fields))
    return changes


def literal(moment: datetime) -> str:
    return f"cast('{moment.isoformat()}' as timestamp with time zone)"


def changed_rows(rows: list[dict[str, Any]], key: str) -> Changes:
    found: Changes = {}
    for row in rows:
        columns = row["changed_columns"]
        assert row[key] not in found, row
        found[row[key]] = (row["change"], None if columns is None else frozenset(columns))
    return found


def as_of_problems(
    rows_of: Rows, marts: str, table: str, at: str, capture: dict[str, dict[str, Any]]
) -> list[str]:
    """`<table>_as_of(at)` (SQL for a moment) against the capture of that moment."""
    rows = rows_of(f"select * from {marts}.{table}_as_of({at})")
    stored = {row[HISTORY[table]]: as_api_fields(table, row) for row in rows}
    problems = [f"{table}: {len(rows) - len(stored)} ids twice"] if len(stored) != len(rows) else []
    return problems + [f"{table}: {m}" for m in mismatches(capture, stored)]


def changed_problems(
    rows_of: Rows,
    marts: str,
    table: str,
    moments: tuple[datetime, datetime],
    captures: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]],
) -> list[str]:
    """`<table>_changed(a, b)` against the difference of the captures of a and b."""
    a, b = moments
    rows = rows_of(f"select * from {marts}.{table}_changed({literal(a)}, {literal(b)})")
    found = changed_rows(rows, HISTORY[table])
    expected = expected_changes(captures[0], captures[1], MART_COLUMN)
    if found == expected:
        return []
    differing = {i: (found.get(i), expected.get(i)) for i in found.keys() | expected.keys()}
    wrong = {i: pair for i, pair in differing.items() if pair[0] != pair[1]}
    return [f"{table}_changed({a}, {b}): id -> (found, expected) {wrong}"]


def build_history_marts(target: Target, dbt_dir: Path) -> None:
    """The five versions marts and what they read, with the functions the hook makes."""
    result = build_models(
        dbt_target(target),
        target.dataset,
        run_tests=False,
        target_path=dbt_dir,
        select=[f"+{mart}" for mart in MART_OF.values()],
    )
    assert result.ok, result.failures or result.error
