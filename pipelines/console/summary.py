"""The summary of one sync run: a table for people, and the same fields per table for the JSON
events."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from drone_ops_sync.sources.drone_ops import ALL_TABLES, TableResult
from drone_ops_sync.sources.drone_ops.internal import redact

from ..run.sync import SyncOutcome

if TYPE_CHECKING:
    from ..publish.dbt_build import ModelsResult
    from ..publish.snapshot import SnapshotResult

STATUS_STYLE = {
    "success": "green",
    "failed": "bold red",
    "refused": "bold yellow",
    "interrupted": "bold yellow",
    "skipped": "dim",
}


def table_fields(outcome: SyncOutcome) -> dict[str, dict[str, Any]]:
    """Per table, what a run did: the summary table's columns, as plain values."""
    return {
        name: result_fields(result)
        for name in ALL_TABLES
        if (result := outcome.report.tables.get(name)) is not None
    }


def result_fields(result: TableResult) -> dict[str, Any]:
    """What a run did to one table, as plain values (a `table` event, a summary row)."""
    return {
        "status": result.status,
        "rows_seen": result.rows_seen,
        "new": result.new,
        "changed": result.changed,
        "retired": result.retired,
        "pages": result.pages,
        "requests": result.requests,
        "retries": result.retries,
        "seconds": round(result.seconds, 3),
        "error": redact(result.error) if result.error else None,
        "scope": result.scope,
    }


def root_cause(outcome: SyncOutcome) -> str | None:
    """Why a run failed, in one line: the first failed table's error (in table order), else the
    load's error; None for a run that did not fail."""
    if outcome.ok:
        return None
    for row in table_fields(outcome).values():
        if row["status"] in ("failed", "refused", "interrupted") and row["error"]:
            return str(row["error"])
    return redact(outcome.load_error) if outcome.load_error else "the run failed"


def print_summary(console: Console, outcome: SyncOutcome, title: str = "Sync summary") -> None:
    report = outcome.report
    table = Table(
        title=f"{title} · run {report.run_id}",
        title_justify="left",
        # plain ASCII in a log file, which grep and mail readers take as text
        box=box.HEAVY_HEAD if console.is_terminal else box.ASCII2,
    )
    table.add_column("table", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for header in ("seen", "new", "changed", "retired", "pages", "requests", "retries", "s"):
        table.add_column(header, justify="right", no_wrap=True)
    fields = table_fields(outcome)
    for name, row in fields.items():
        table.add_row(
            name,
            Text(row["status"], style=STATUS_STYLE.get(row["status"], "")),
            *(f"{row[key]:,}" for key in ("rows_seen", "new", "changed", "retired", "pages")),
            *(f"{row[key]:,}" for key in ("requests", "retries")),
            f"{row['seconds']:.2f}",
        )
    _print_whole(console, table)
    requests = sum(r.requests for r in report.tables.values())
    console.print(
        f"{requests:,} requests · load {outcome.load_seconds:.2f}s · total"
        f" {outcome.total_seconds:.2f}s"
        + (f" · {outcome.issues} contract issues in _sync_issues" if outcome.issues else "")
        + (f" · database {outcome.database}" if outcome.database else ""),
        markup=False,
    )
    if outcome.pipeline_name:
        console.print(
            f"dlt's pipeline name: {outcome.pipeline_name} (`dlt pipeline"
            f" {outcome.pipeline_name} info|trace|show`)",
            markup=False,
            highlight=False,
        )
    for note in outcome.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    for name, row in fields.items():
        if row["scope"]:
            console.print(f"[bold]{name}[/bold]: {escape(row['scope'])}")
    # an interrupted table's cause is the signal, which the command's last line tells
    errors = {name: row["error"] for name, row in fields.items() if row["status"] != "interrupted"}
    causes = _group_causes({name: error for name, error in errors.items() if error})
    for error, names in causes.items():
        console.print(f"[bold red]{', '.join(names)}[/bold red]: {escape(error)}")
    if outcome.load_error and outcome.load_error not in causes:
        console.print(f"[bold red]load failed[/bold red]: {escape(redact(outcome.load_error))}")
    if outcome.ok:
        console.print("[green]all tables loaded[/green]")
    elif len(errors) == len(fields):
        console.print("[bold red]run failed[/bold red]")


def _print_whole(console: Console, table: Table) -> None:
    """Every figure whole in a log: a console narrower than the table's columns (which never
    wrap) is widened for it, instead of cutting figures short with an ellipsis."""
    needed = Measurement.get(console, console.options.update_width(10_000), table).minimum
    width = console.width
    console.width = max(width, needed)
    try:
        console.print(table)
    finally:
        console.width = width


def interrupted_tables(outcome: SyncOutcome) -> str:
    """What a run that a signal stopped did and did not load, and what the next run does."""
    fields = table_fields(outcome)
    interrupted = [name for name, row in fields.items() if row["status"] == "interrupted"]
    loaded = [name for name in fields if outcome.report.tables[name].loaded]
    return (
        (f"loaded in full: {', '.join(loaded)}; " if loaded else "")
        + (f"not loaded: {', '.join(interrupted)}; " if interrupted else "")
        + "the next run picks up the rest"
    )


def _group_causes(errors: dict[str, str]) -> dict[str, list[str]]:
    """One line per cause: an unreachable API or a refused key fails every endpoint alike (the
    line names the first and counts the others); a table failed by another's cause joins it."""
    bare = {name: error.removeprefix(f"{name}: ") for name, error in errors.items()}
    keys = {name: _ENDPOINT.sub(_AN_ENDPOINT, error, count=1) for name, error in bare.items()}
    causes: dict[str, list[str]] = {}
    for name in sorted(keys, key=lambda name: len(keys[name])):
        cause = next((known for known in causes if keys[name].endswith(known)), keys[name])
        causes.setdefault(cause, []).append(name)
    order = list(errors)
    lines: dict[str, list[str]] = {}
    for cause, names in sorted(causes.items(), key=lambda item: min(map(order.index, item[1]))):
        names.sort(key=order.index)
        endpoints = list(dict.fromkeys(m[0] for n in names if (m := _ENDPOINT.search(bare[n]))))
        others = f" (and {len(endpoints) - 1} other endpoints)" if len(endpoints) > 1 else ""
        shown = endpoints[0] + others if endpoints else _AN_ENDPOINT
        lines[cause.replace(_AN_ENDPOINT, shown)] = names
    return lines


_ENDPOINT = re.compile(r"\bGET /\S*")
"""How our errors name a request (`exceptions.py`): the part that differs between endpoints."""
_AN_ENDPOINT = "GET <endpoint>"


def models_fields(result: ModelsResult, dataset: str | None) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "models_built": result.models_built,
        "tests_passed": result.tests_passed,
        "tests_failed": result.tests_failed,
        "seconds": round(result.seconds, 3),
        "failures": [f"{failure.node}: {failure.message}" for failure in result.failures],
        "error": redact(result.error) if result.error else None,
        "rebuilt": result.reused_from is None,
        "built_at": result.reused_from,
        "scope": result.scope,
        "reason": result.reason,
        "changed_tables": list(result.changed_tables),
        "built": sorted(result.built),
        **({"marts_schema": f"{dataset}_marts"} if dataset else {}),
    }


def snapshot_fields(result: SnapshotResult) -> dict[str, Any]:
    return {
        "ok": True,
        "path": str(result.path),
        "tables": list(result.tables),
        "bytes": result.bytes,
        "seconds": round(result.seconds, 3),
        "run_id": result.run_id,
        "include_raw": result.include_raw,
        "refreshed": result.refreshed,
        "replaced": list(result.replaced),
        "dashboard": None if result.dashboard is None else str(result.dashboard),
        "error": None,
    }
