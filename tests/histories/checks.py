"""The invariants a history's warehouse is held to after every step, each returning the
problems it finds (empty: it holds). Read independently of the sync's code: the warehouse
through `tests/chaos/truth.py`'s reader, the API over HTTP.

- current rows: every data table's current rows equal the model's (`expected.py`), values
  and all, and no id is current twice (`compare_with_api`);
- `_webhook_events`: one row per spooled delivery, with the outcome the model gives it;
- versions: no two versions of one id are valid at the same instant, and no version is older
  (by the record's own `updated`) than the one before it, unless the API itself listed that
  older version at some run (an admin edit set `updated` back, or the API's version replaced a
  newer one no run ever saw);
- deletions: a row a run retired is gone from the API when asked by id (404).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tests.chaos.truth import Reader, compare_with_api
from tests.pipelines.warehouse_check import expected_value

from .expected import HISTORY_TABLES, Records, Tables
from .world import World

RECORD_PATHS = {
    "projects": "/v1/projects/{id}",
    "jobs": "/v1/projects/{project_id}/jobs/{id}",
    "job_types": "/v1/job-types/{id}",
    "team_members": "/v1/team/{id}",
    "webhooks": "/v1/webhooks/{id}",
}
UPDATED_TABLES = ("projects", "jobs", "team_members", "webhooks")
"""The history tables whose records carry `updated` (job types have none)."""

Listed = set[tuple[str, str, Any]]
"""(table, id, updated) of every version the API listed at a run."""


def current_problems(
    world: World, variants: Sequence[Tables], users: Records
) -> tuple[list[str], Tables]:
    """The current rows against the model; with several variants (a raced walk), against the
    one they match best. Returns the problems and that variant."""
    best: tuple[list[str], Tables] | None = None
    for tables in variants:
        report = compare_with_api(world.warehouse, world.target.dataset, tables, users)
        if best is None or len(report.problems()) < len(best[0]):
            best = report.problems(), tables
        if not best[0]:
            break
    assert best is not None, "no variant to compare with"
    return best


def events_problems(world: World, outcomes: dict[str, str]) -> list[str]:
    with Reader(world.warehouse, world.target.dataset) as reader:
        if "_webhook_events" not in reader.tables:
            return [] if not outcomes else ["no _webhook_events table"]
        rows = reader.rows(
            f'SELECT delivery_id, outcome FROM "{world.target.dataset}"."_webhook_events"'
        )
    found = {row["delivery_id"]: row["outcome"] for row in rows}
    problems = [f"_webhook_events: {len(rows) - len(found)} delivery ids twice"]
    problems = problems if len(found) != len(rows) else []
    if found != outcomes:
        wrong = {
            i: (found.get(i), outcomes.get(i))
            for i in found.keys() | outcomes.keys()
            if found.get(i) != outcomes.get(i)
        }
        problems.append(f"_webhook_events: delivery id -> (found, expected) {wrong}")
    return problems


def version_problems(world: World, listed: Listed) -> list[str]:
    """Overlapping validity, and versions going back, in every history table."""
    problems: list[str] = []
    with Reader(world.warehouse, world.target.dataset) as reader:
        for table in HISTORY_TABLES:
            if table not in reader.tables:
                continue
            updated = ", updated" if table in UPDATED_TABLES else ""
            rows = reader.rows(
                f'SELECT id, _dlt_valid_from, _dlt_valid_to{updated} FROM "{reader.dataset}".'
                f'"{table}" ORDER BY id, _dlt_valid_from'
            )
            problems += _overlaps(table, rows)
            if updated:
                problems += _going_back(table, rows, listed)
    return problems


def _overlaps(table: str, rows: list[dict[str, Any]]) -> list[str]:
    problems = []
    for earlier, later in itertools.pairwise(rows):
        if earlier["id"] != later["id"]:
            continue
        ends: datetime | None = earlier["_dlt_valid_to"]
        if ends is None or ends > later["_dlt_valid_from"]:
            problems.append(
                f"{table} {earlier['id']}: a version valid from {earlier['_dlt_valid_from']}"
                f" to {ends} overlaps the next, valid from {later['_dlt_valid_from']}"
            )
    return problems


def _going_back(table: str, rows: list[dict[str, Any]], listed: Listed) -> list[str]:
    problems = []
    for earlier, later in itertools.pairwise(rows):
        if earlier["id"] != later["id"] or earlier["_dlt_valid_to"] != later["_dlt_valid_from"]:
            continue  # another entity, or a version after a retirement: nothing held then
        if later["updated"] is None or earlier["updated"] is None:
            continue
        if later["updated"] < earlier["updated"] and (table, later["id"], later["updated"]) not in (
            listed
        ):
            problems.append(
                f"{table} {later['id']}: a version updated {later['updated']} followed one"
                f" updated {earlier['updated']}, and the API never listed it"
            )
    return problems


def deletion_problems(world: World, before: Tables, after: Tables) -> list[str]:
    """Every id current before a run and retired by it must be gone from the API by id."""
    problems = []
    with world.sim.client(full=False, timeout=60) as api:
        for table in HISTORY_TABLES:
            for record_id in before[table].keys() - after[table].keys():
                record = before[table][record_id]
                path = RECORD_PATHS[table].format(id=record_id, project_id=record.get("project_id"))
                status = api.get(path).status_code
                if status != 404:
                    problems.append(f"{table} {record_id} retired, but GET {path} answers {status}")
    return problems


def listed_versions(api: Tables) -> Listed:
    """(table, id, updated) of every record of a listing, with `updated` as the warehouse
    reads it back (a timestamp)."""
    return {
        (table, record_id, expected_value("updated", record.get("updated")))
        for table in UPDATED_TABLES
        for record_id, record in api.get(table, {}).items()
    }
