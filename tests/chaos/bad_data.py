"""Shared steps of the bad-data cases: a clean warehouse to start from, the defect run, the
issues it recorded, and the rule that no stored value differs from the API's silently."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.sources.drone_ops.tables.entities import TABLE_COLUMNS

from .fault_server import FaultServer, Workspace, workspace_snapshot
from .harness import Warehouse
from .results import ChaosResults
from .truth import ENTITY_TABLES, Reader, field_differences, message_problems, run_rows

KEY = "chaos-fixture-key"


def clean_template(root: Path) -> Warehouse:
    """A warehouse holding the clean fixture workspace (copied by each case)."""
    warehouse = Warehouse(root)
    with FaultServer(Workspace(KEY)) as server:
        outcome = warehouse.run(server.base_url, KEY)
    assert outcome.ok, outcome.report.tables
    return warehouse


@dataclass
class DefectRun:
    outcome: SyncOutcome
    seconds: float
    cpu_seconds: float
    """The CPU this process spent on the run (the sync and the fixture server both run here):
    the run's work, which a busy machine does not inflate the way it does the wall clock."""
    requests: dict[str, int]
    issues: list[dict[str, Any]]
    before: dict[str, list[dict[str, Any]]]
    after: dict[str, list[dict[str, Any]]]

    def failed(self) -> dict[str, str | None]:
        return {
            name: result.error
            for name, result in self.outcome.report.tables.items()
            if result.status not in ("success", "skipped")
        }

    def issue_keys(self) -> set[tuple[str, str, str]]:
        return {(i["table_name"], i["record_id"], i["field"]) for i in self.issues}


def all_rows(warehouse: Warehouse) -> dict[str, list[dict[str, Any]]]:
    """Every row (history included) of the entity tables, in a stable order."""
    with Reader(warehouse.database, warehouse.dataset) as reader:
        return {
            table: reader.rows(f'SELECT * FROM "{warehouse.dataset}"."{table}" ORDER BY "_dlt_id"')
            for table in ENTITY_TABLES
            if table in reader.tables
        }


def run_defect(
    template: Warehouse, root: Path, workspace: Workspace, **overrides: Any
) -> tuple[Warehouse, DefectRun]:
    """Copies the clean warehouse, syncs it from `workspace` (with its defect) and returns the
    run, its issues and the entity tables before and after."""
    warehouse = template.copy_to(root)
    before = all_rows(warehouse)
    with FaultServer(workspace, max_requests=400) as server:
        started, cpu_started = time.monotonic(), time.process_time()
        outcome = warehouse.run(server.base_url, KEY, **overrides)
        seconds = time.monotonic() - started
        cpu_seconds = time.process_time() - cpu_started
        requests = dict(server.paths())
    issues = []
    with Reader(warehouse.database, warehouse.dataset) as reader:
        if "_sync_issues" in reader.tables:
            issues = reader.rows(
                f'SELECT * FROM "{warehouse.dataset}"._sync_issues'
                f" WHERE run_id = '{outcome.report.run_id}'"
            )
    after = all_rows(warehouse)
    return warehouse, DefectRun(outcome, seconds, cpu_seconds, requests, issues, before, after)


def unknown_field(table: str, name: str) -> bool:
    known = {column.name for column in TABLE_COLUMNS.get(table, ())} | {"created_by"}
    return name not in known


def silent_differences(warehouse: Warehouse, workspace: Workspace, run: DefectRun) -> list[str]:
    """Stored values that differ from what the API said with no `_sync_issues` row naming
    (table, id, field), in tables the run loaded. A field the spec does not know is text: a
    string must be stored as it is, any other value as its JSON text."""
    api = workspace_snapshot(workspace)
    recorded = run.issue_keys()
    failed = set(run.failed())
    problems = []
    with Reader(warehouse.database, warehouse.dataset) as reader:
        for table, records in api.items():
            if table in failed:
                continue
            rows = {row["id"]: row for row in reader.current_rows(table)}
            for record_id, record in records.items():
                row = rows.get(record_id)
                if row is None:
                    problems.append(f"{table}.{record_id}: not loaded and no issue recorded")
                    continue
                for name, want, got in field_differences(table, record, row):
                    if (
                        unknown_field(table, name)
                        and isinstance(got, str)
                        and not isinstance(want, str)
                        and json.loads(got) == want
                    ):
                        continue
                    if (table, record_id, name) not in recorded:
                        problems.append(
                            f"{table}.{record_id}.{name}: API {want!r:.60} stored as {got!r:.60}"
                            " with no _sync_issues row"
                        )
    return problems


def named_failure_problems(warehouse: Warehouse, run: DefectRun) -> list[str]:
    """Failed tables whose message (report and `_sync_runs`) is empty or lacks the endpoint or
    the cause (whether it names the table is test_guards.py's business)."""
    return failure_message_problems(warehouse, run.outcome, table_name=False)


def failure_message_problems(
    warehouse: Warehouse, outcome: SyncOutcome, *, table_name: bool, endpoint: bool = True
) -> list[str]:
    problems = [
        problem
        for name, result in outcome.report.tables.items()
        for problem in message_problems(
            name, result.status, result.error, table_name=table_name, endpoint=endpoint
        )
    ]
    for row in run_rows(warehouse.database, warehouse.dataset, outcome.report.run_id):
        problems += [
            f"_sync_runs {problem}"
            for problem in message_problems(
                row["resource"],
                row["status"],
                row["error"],
                table_name=table_name,
                endpoint=endpoint,
            )
        ]
    return problems


def duplicate_current_rows(tables: dict[str, list[dict[str, Any]]]) -> int:
    """Surplus current rows (an id current n times counts n - 1) over the entity tables."""
    surplus = 0
    for rows in tables.values():
        current = [row["id"] for row in rows if row.get("_dlt_valid_to") is None]
        surplus += len(current) - len(set(current))
    return surplus


def heal_and_check(
    warehouse: Warehouse,
    results: ChaosResults,
    kind: str,
    run: DefectRun,
    problems: list[str],
    clean: Workspace | None = None,
) -> None:
    """The defect goes away (the API becomes `clean`, by default the clean fixture
    workspace). Records the case (survived: the defect was handled as it should be *and* a
    clean run afterwards brings the warehouse to equality), then raises for the truth
    check."""
    truth_error: str | None = None
    lost = stale = 0
    with FaultServer(clean or Workspace(KEY)) as server:
        healed = warehouse.run(server.base_url, KEY)
        try:
            report = warehouse.check(server.base_url, KEY)
            lost, stale = report.rows_lost, report.stale_rows
        except AssertionError as exc:
            truth_error = str(exc)
    duplicates = duplicate_current_rows(run.after)
    results.add(
        kind,
        survived=not problems and truth_error is None and healed.ok and not duplicates,
        run_ok=run.outcome.ok,
        rows_lost=lost,
        duplicates=duplicates,
        stale=stale,
        note="; ".join([*problems, truth_error or ""])[:500],
    )
    assert healed.ok, f"the clean run after the defect failed: {healed.report.tables}"
    assert truth_error is None, truth_error
