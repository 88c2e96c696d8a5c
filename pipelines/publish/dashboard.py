"""The dashboard: one self-contained HTML page of the BI snapshot, written beside it after every
publish and by `drone-sync dashboard` on demand (docs/dashboard.md).

Why a static file: a manager opens it from disk (file://) with no server to run, nothing to
install and no request leaving the machine. The page is the template
`dashboard_assets/dashboard.html` (inline CSS and a small script) with everything it uses
inlined: the data read here from the snapshot, the base map's country outlines
(`world_outlines.json`, Natural Earth, public domain) and the map libraries (Leaflet, and
Supercluster with the KDBush it bundles, shipped in `dashboard_assets/` with their licences).
It reads the snapshot, never the warehouse, so writing it never waits for or blocks a sync
(docs/bi.md). Every number on its tiles comes from the metrics mart (`metrics.py`); the lists
and charts are rows of the marts, grouped.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from drone_ops_sync.sources.drone_ops import DroneOpsError

from ..run.door import SNAPSHOT_SETTING, read_only
from ..run.durable import replace_durably
from .metrics import has_metrics, quoted_marts, read_metrics

ASSETS = "dashboard_assets"
TEMPLATE = "dashboard.html"
# inlined where the template names them, `</` written `<\/` so that no `</script>` or
# `</style>` inside them ends their block early: in these files `</` occurs only in JSON and
# JavaScript strings, where both mean the same
INLINED = (
    "world_outlines.json",
    "leaflet.css",
    "leaflet.js",
    "supercluster.min.js",
    "LICENSE-leaflet.txt",
    "LICENSE-supercluster.txt",
    "LICENSE-kdbush.txt",
)
DASHBOARD_SUFFIX = "_dashboard.html"
HISTORY_DAYS = 30
"""Days of webhook delivery health the page charts (the metrics' window)."""

# `{marts}`: the quoted marts schema. Each query is one panel's rows.
QUERIES: dict[str, str] = {
    "projects": """
        select workspace, project_id, name, status, is_archived, start_date, end_date,
               jobs_total, jobs_open
        from {marts}.dim_projects order by workspace, name, project_id""",
    "jobs": """
        select workspace, job_id, name, project_id, status, priority, is_open,
               latitude, longitude, end_date, job_type_name
        from {marts}.dim_jobs where not is_project_archived
        order by workspace, project_id, job_id""",
    "flights": """
        select occurrences.workspace, occurrences.project_id, occurrences.occurrence_date,
               sum(coalesce(jobs.flights_per_occurrence, 1)) as flights
        from {marts}.fct_job_occurrences as occurrences
        inner join {marts}.dim_jobs as jobs
            on occurrences.workspace = jobs.workspace and occurrences.job_id = jobs.job_id
        cross join (select max(measured_date) as today from {marts}.fct_metrics) as measured
        where jobs.is_open and not jobs.is_project_archived
            and occurrences.occurrence_date >= measured.today
            and occurrences.occurrence_date < measured.today + 30
        group by all order by all""",
    "history": """
        select workspace, project_id, interval_number, status, valid_from, valid_to,
               is_current, is_closed_by_retirement, duration_seconds
        from {marts}.fct_project_status_history
        order by workspace, project_id, interval_number""",
    "webhooks": """
        select health.workspace, health.delivery_date, sum(health.deliveries) as deliveries,
               sum(health.failures) as failures
        from {marts}.fct_webhook_delivery_health_daily as health
        cross join (select max(measured_date) as today from {marts}.fct_metrics) as measured
        where health.delivery_date > measured.today - {days}
        group by all order by all""",
}
# per workspace: the newest run with no failed, refused or interrupted table (docs/bi.md)
AS_OF_SQL = """
select coalesce(workspace, 'default') as workspace, max(finished_at) as data_as_of
from (
    select workspace, run_id, max(finished_at) as finished_at,
           bool_and(status not in ('failed', 'refused', 'interrupted')) as complete
    from {runs} group by workspace, run_id
)
where complete group by all order by 1"""


class DashboardError(DroneOpsError):
    """The dashboard could not be written; a previous one at the path is left as it was."""


def default_dashboard_path(snapshot: Path) -> Path:
    """`<snapshot stem>_dashboard.html` beside the snapshot it shows."""
    return snapshot.with_name(f"{snapshot.stem}{DASHBOARD_SUFFIX}")


def write_dashboard(snapshot: Path, dataset: str, output: Path | None = None) -> Path:
    """Renders the snapshot into the page and writes it to `output` (default beside the
    snapshot) under a temporary name renamed over the previous page, so a browser reloading
    it never reads half a file. Raises `DashboardError` with the cause."""
    target = output if output is not None else default_dashboard_path(snapshot)
    if not snapshot.is_file():
        raise DashboardError(
            f"no BI snapshot at {snapshot}: run `drone-sync run` or `drone-sync models` first"
            " (docs/bi.md)"
        )
    try:
        replace_durably(target, render_page(collect(snapshot, dataset)))
    except (OSError, duckdb.Error, DroneOpsError) as exc:
        raise DashboardError(
            f"could not write the dashboard {target}: {type(exc).__name__}: {exc}"
        ) from None
    return target


def collect(snapshot: Path, dataset: str) -> dict[str, Any]:
    """Everything the page shows, read from the snapshot in one read-only connection."""
    with read_only(snapshot, SNAPSHOT_SETTING) as con:
        info = _rows(con, "select * from main._snapshot_info")
        data: dict[str, Any] = {
            "dataset": dataset,
            "snapshot": snapshot.name,
            "info": info[0] if info else {},
            "as_of": _as_of(con, dataset),
            "metrics": [vars(metric) for metric in read_metrics(con, dataset)],
        }
        ready = has_metrics(con, dataset)
        for name, sql in QUERIES.items():
            query = sql.format(marts=quoted_marts(dataset), days=HISTORY_DAYS)
            data[name] = _columns(con, query) if ready else {}
        return data


def render_page(data: dict[str, Any]) -> str:
    """The template with every asset it names (`{{file name}}`) inlined and the data embedded
    as a JSON script block: one file that needs nothing else."""
    assets = resources.files("drone_ops_sync.pipelines.publish").joinpath(ASSETS)
    page = assets.joinpath(TEMPLATE).read_text(encoding="utf-8")
    for name in INLINED:
        text = assets.joinpath(name).read_text(encoding="utf-8").strip()
        page = page.replace("{{" + name + "}}", text.replace("</", "<\\/"))
    return page.replace("{{DATA}}", _script_json(data))


def _as_of(con: duckdb.DuckDBPyConnection, dataset: str) -> list[dict[str, Any]]:
    found = con.execute(
        "select count(*) from information_schema.tables"
        " where table_schema = ? and table_name = '_sync_runs'",
        [dataset],
    ).fetchone()
    if not found or not found[0]:
        return []
    runs = '"' + dataset.replace('"', '""') + '"._sync_runs'
    return _rows(con, AS_OF_SQL.format(runs=runs))


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description or []]
    return [dict(zip(names, map(_plain, row), strict=True)) for row in cursor.fetchall()]


def _columns(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, list[Any]]:
    """Column-wise rows ({column: [values]}): a third of the size of a list of objects, which
    counts for the jobs of a large workspace."""
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description or []]
    values: list[list[Any]] = [[] for _ in names]
    for row in cursor.fetchall():
        for column, value in zip(values, row, strict=True):
            column.append(_plain(value))
    return dict(zip(names, values, strict=True))


def _plain(value: Any) -> Any:
    """JSON-ready: dates and times as ISO text, decimals as floats."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return float(value)


def _script_json(data: dict[str, Any]) -> str:
    """JSON safe inside <script>: no `</` can end the block early (a job named `</script>`)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
