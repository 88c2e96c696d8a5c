"""`drone-sync demo`: the whole product on a simulated workspace, with nothing configured.

Starts the simulator in this process on a free loopback port, syncs, changes the workspace
through the API, syncs again, then builds the dbt models, prints the metrics and answers example
questions, and writes the dashboard page of the BI snapshot.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from drone_ops_sync.sources.drone_ops import read_source_config

from .console.summary import print_summary
from .run.door import read_only
from .run.target import DEFAULT_DATABASE, Target

DEMO_QUERIES: tuple[tuple[str, str], ...] = (
    (
        "Current projects by status (current versions only)",
        """
        select status, count(*) as projects, count(*) filter (where archived) as archived
        from {raw}.projects where _dlt_valid_to is null
        group by status order by projects desc
        """,
    ),
    (
        "History kept: every version of the projects changed by the second run",
        """
        select id, name, status, archived, _dlt_valid_from as valid_from,
               _dlt_valid_to as valid_to
        from {raw}.projects
        where id in (
            select id from {raw}.projects group by id
            having count(*) > 1 or bool_and(_dlt_valid_to is not null)
        )
        order by id, _dlt_valid_from
        """,
    ),
    (
        "Webhook deliveries per webhook and outcome",
        """
        select webhook_id, status, count(*) as deliveries,
               round(avg(duration_ms)) as avg_ms, max(created) as latest
        from {raw}.webhook_deliveries group by webhook_id, status order by webhook_id, status
        """,
    ),
)


def run_demo(directory: Path, *, seed: int = 42, console: Console) -> int:
    from drone_ops_sync.simulator.server import serve_in_thread

    from .console.progress import live_progress
    from .publish.dashboard import write_dashboard
    from .publish.dbt_build import build_models
    from .publish.questions import answer_questions
    from .publish.snapshot import publish_snapshot
    from .publish.snapshot_plan import default_snapshot_path
    from .run.destination import check_creatable
    from .run.dlt_tooling import link_for_dlt_cli
    from .session import run_sync

    database = directory / DEFAULT_DATABASE
    check_creatable("--dir", database)
    _fresh(directory, database)
    target = Target(database=database)
    console.rule("drone-sync demo")
    console.print(f"starting the simulator (seed {seed}, scale small) on 127.0.0.1 ...")
    with serve_in_thread(seed=seed, scale="small", admin=True) as sim:
        console.print(f"simulator at {sim.base_url} (read-only key used for syncing)")
        config = read_source_config({"base_url": sim.base_url, "api_key": sim.read_key})
        with live_progress(console) as counter:
            first = run_sync(target, progress=counter, config=config)
        print_summary(console, first, "First sync (everything is new)")
        if not first.ok:
            return 1
        console.rule("changing the workspace through the API")
        with sim.client(full=True) as api:
            for line in _change_workspace(api):
                console.print(f"  {line}")
        sim.wait_for_deliveries(timeout=30)
        with live_progress(console) as counter:
            second = run_sync(target, progress=counter, config=config)
        print_summary(console, second, "Second sync (only the changes)")
        if not second.ok:
            return 1
    console.rule("example SQL on the raw tables")
    _print_queries(console, database)
    console.rule("dbt models")
    with console.status("building and testing the dbt models"):
        result = build_models(database.resolve(), target.dataset)
    console.print(
        f"{result.models_built} models built, {result.tests_passed} tests passed,"
        f" {result.tests_failed} failed ({result.seconds:.1f}s)"
    )
    if not result.ok:
        for failure in result.failures:
            console.print(f"[red]{failure.node}[/red]: {failure.message}")
        return 1
    snapshot = publish_snapshot(
        database.resolve(), target.dataset, default_snapshot_path(database), include_raw=False
    )
    _print_metrics(console, snapshot.path, target.dataset)
    for title, columns, rows in answer_questions(database.resolve(), target.dataset):
        _print_rows(console, title, columns, rows)
    dashboard = write_dashboard(snapshot.path, target.dataset).resolve()
    tooling_note = link_for_dlt_cli(target)
    if tooling_note:
        console.print(tooling_note)
    # short lines, wrapped at the console's width, naming only what an installed copy has
    for line in (
        f"\nThe warehouse: {database}",
        f"For a BI tool, the read-only snapshot: {snapshot.path} (schema"
        f" {target.dataset}_marts; open it read-only: `drone-sync metrics --help` says how)",
        f"dlt's view of the run: `dlt pipeline {target.pipeline_name()} info`",
        "Run `drone-sync demo` again for a fresh copy.",
        f"\nThe dashboard of that snapshot, to open in a browser: {dashboard.as_uri()}",
        "(`drone-sync dashboard` writes it again from the newest snapshot; see its --help)",
    ):
        console.print(line, markup=False, highlight=False, soft_wrap=False)
    return 0


def _print_metrics(console: Console, snapshot: Path, dataset: str) -> None:
    """The metrics mart as the dashboard's tiles show it."""
    from .publish.metrics import ALL_WORKSPACES, read_metrics_file

    metrics = [m for m in read_metrics_file(snapshot, dataset) if m.workspace != ALL_WORKSPACES]
    rows = [(m.workspace, m.name, m.label, m.shown()) for m in metrics]
    _print_rows(
        console,
        f"Metrics ({dataset}_marts.fct_metrics, the dashboard's tiles)",
        ["workspace", "metric", "label", "value"],
        rows,
    )


def _fresh(directory: Path, database: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in (database, database.with_suffix(".duckdb.wal")):
        leftover.unlink(missing_ok=True)
    shutil.rmtree(directory / ".dlt_pipelines", ignore_errors=True)


def _change_workspace(api: httpx.Client) -> list[str]:
    """A realistic morning: weather, an archive, a deletion, new work."""
    projects = api.get("/v1/projects").raise_for_status().json()["projects"]
    done: list[str] = []
    delayed, archived, deleted, extended = projects[0], projects[1], projects[2], projects[3]
    for project in (delayed, extended):
        api.patch(
            f"/v1/projects/{project['id']}", json={"status": "weather_delayed"}
        ).raise_for_status()
        done.append(f"project {project['name']!r} → weather_delayed")
    api.post(f"/v1/projects/{archived['id']}/archive", json={"archived": True}).raise_for_status()
    done.append(f"project {archived['name']!r} archived")
    api.delete(f"/v1/projects/{deleted['id']}").raise_for_status()
    done.append(f"project {deleted['name']!r} deleted (its jobs go with it)")
    job_type = api.post("/v1/job-types", json={"name": "Blade leading-edge survey", "icon": "wind"})
    type_id = job_type.raise_for_status().json()["id"]
    done.append(f"job type {type_id} created")
    today = datetime.now(UTC).date().isoformat()
    for name, pattern, extra in (
        ("Post-storm blade check", "one_time", {}),
        (
            "Monthly thermal sweep",
            "recurring",
            {
                "recurring_frequency": "monthly",
                "weeks_of_month": [1, -1],
                "selected_days_of_week": [2],
            },
        ),
    ):
        body: dict[str, Any] = {
            "name": name,
            "type": type_id,
            "job_pattern": pattern,
            "start_date": today,
            "priority": "high",
            "latitude": 53.42,
            "longitude": 6.18,
            "capture_types": ["thermal_inspection", "video_capture"],
            **extra,
        }
        api.post(f"/v1/projects/{extended['id']}/jobs", json=body).raise_for_status()
        done.append(f"job {name!r} created in {extended['name']!r}")
    jobs = api.get(f"/v1/projects/{delayed['id']}/jobs").raise_for_status().json()["jobs"]
    if jobs:
        api.delete(f"/v1/projects/{delayed['id']}/jobs/{jobs[0]['id']}").raise_for_status()
        done.append(f"job {jobs[0]['name']!r} deleted")
    return done


def _print_queries(console: Console, database: Path) -> None:
    with read_only(database) as con:
        for title, sql in DEMO_QUERIES:
            query = sql.format(raw="drone_ops")
            cursor = con.execute(query)
            columns = [column[0] for column in cursor.description or []]
            console.print(f"[dim]{' '.join(query.split())}[/dim]", soft_wrap=False)
            _print_rows(console, title, columns, cursor.fetchall())


def _print_rows(console: Console, title: str, columns: list[str], rows: list[Any]) -> None:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows[:20]:
        table.add_row(*(_cell(value) for value in row))
    if not rows:
        table.caption = "(no rows)"
    console.print(table)


def _cell(value: Any) -> str:
    """Readable cells: minutes for timestamps, three decimals for measures."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)
