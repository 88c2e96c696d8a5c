"""drone-sync's own dashboard (docs/dashboard.md), from a synced simulator workspace, looked at
in Debian's headless Chromium with every host but 127.0.0.1 unresolvable: the page a run wrote
beside the BI snapshot opens from file://, shows every located job on the map (as a marker or
in a cluster) and the metrics' numbers exactly as the metrics mart's SQL gives them, its
filters work, and loading it asks for nothing but the file itself.

Skipped unless /usr/bin/chromium is installed (`apt-get install chromium`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from testkit.simulator_process import SimulatorHandle

from .cli_helpers import EXIT_OK, cli_env, run_cli
from .dashboard_map import jobs_shown, list_columns, settled_map, wait_ready
from .headless_browser import CHROMIUM, browser_page

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"
    ),
]

# the metrics of the whole fleet as docs/metrics.md documents the query
FLEET_SQL = """
select metric,
       case when any_value(unit) = 'count' then sum(numerator)
            when sum(denominator) > 0 then sum(numerator) / sum(denominator) end as value,
       any_value(unit)
from drone_ops_marts.fct_metrics group by metric
"""
# the map's points, counted from the jobs mart itself, not from the metrics mart
LOCATED_SQL = """
select count(*) from drone_ops_marts.dim_jobs
where not is_project_archived and latitude is not null and longitude is not null
"""
# each unarchived project as the page's menu names it, and its located jobs
PROJECTS_SQL = """
select projects.name || ' (' || projects.project_id || ', ' || projects.workspace || ')',
       count(jobs.latitude)
from drone_ops_marts.dim_projects as projects
left join drone_ops_marts.dim_jobs as jobs
    on jobs.workspace = projects.workspace and jobs.project_id = projects.project_id
where not projects.is_archived group by all
"""
PICK_PROJECT = """(() => {{ const input = document.getElementById('project'); input.value = {label};
  input.dispatchEvent(new Event('input')); return true; }})()"""
TILES = """JSON.stringify(Object.fromEntries([...document.querySelectorAll('.tile')].map(
  tile => [tile.dataset.metric, tile.querySelector('.value').textContent])))"""


def test_dashboard_page_shows_the_snapshot(tiny_sim: SimulatorHandle, tmp_path: Path) -> None:
    database = tmp_path / "w" / "warehouse.duckdb"
    env = cli_env(tmp_path, base_url=tiny_sim.base_url, api_key=tiny_sim.read_key)
    synced = run_cli(["run", "--database", str(database)], env, tmp_path)
    assert synced.code == EXIT_OK, synced.describe()
    snapshot = database.with_name("warehouse_bi.duckdb")
    published = database.with_name("warehouse_bi_dashboard.html")
    assert published.is_file(), synced.describe()
    assert f"dashboard {published}" in synced.out, synced.out

    page = tmp_path / "on demand" / "page.html"
    page.parent.mkdir()
    written = run_cli(
        ["dashboard", "--database", str(database), "--output", str(page)], env, tmp_path
    )
    assert written.code == EXIT_OK, written.describe()
    assert page.as_uri() in written.out, written.out

    expected, located, high, projects = _from_snapshot(snapshot)
    assert located > 0 and expected["jobs_mapped"][0] == located
    for html, name in ((published, "published"), (page, "on_demand")):
        with browser_page(tmp_path / f"profile-{name}") as browser:
            browser.call("Network.enable")
            browser.call("Page.navigate", url=html.as_uri())
            wait_ready(browser)
            browser.screenshot(tmp_path / f"dashboard-{name}.png")
            tiles = json.loads(browser.evaluate(TILES))
            # one workspace: its lists have no workspace column
            overdue = list_columns(browser, "overdue")
            assert overdue == ["kind", "id", "name", "status", "end date"], overdue
            # every located job is on the map, as a marker of its own or in a cluster
            settled_map(browser, lambda state: jobs_shown(state) == located)
            # a project chosen: the map zooms in until each of its jobs is a marker of its own
            for label, jobs in projects.items():
                browser.evaluate(PICK_PROJECT.format(label=json.dumps(label)))
                apart = [jobs, []]
                settled_map(
                    browser, lambda state, apart=apart: [state["jobs"], state["clusters"]] == apart
                )
            browser.evaluate(PICK_PROJECT.format(label='""'))
            browser.evaluate("document.querySelector('input.priority[value=high]').click(); true")
            settled_map(browser, lambda state: jobs_shown(state) == located - high)
            urls = browser.requested_urls()
        assert set(tiles) == set(expected), tiles
        for metric, (value, unit) in expected.items():
            assert tiles[metric] == _shown(value, unit), (metric, tiles[metric], value)
        # the page itself is the only request: no font, tile, script or telemetry anywhere
        assert urls == [html.as_uri()], urls

    listed = run_cli(
        ["--log-format", "json", "metrics", "--database", str(database)], env, tmp_path
    )
    assert listed.code == EXIT_OK, listed.describe()
    fleet = {
        event["name"]: event["value"]
        for event in map(json.loads, listed.out.splitlines())
        if event.get("event") == "metric" and event["workspace"] == "(all)"
    }
    assert fleet == {metric: value for metric, (value, _) in expected.items()}


def _from_snapshot(
    snapshot: Path,
) -> tuple[dict[str, tuple[Any, str]], int, int, dict[str, int]]:
    con = duckdb.connect(str(snapshot), read_only=True)
    try:
        expected = {str(m): (v, str(u)) for m, v, u in con.execute(FLEET_SQL).fetchall()}
        located = con.execute(LOCATED_SQL).fetchone()
        high = con.execute(LOCATED_SQL + " and priority = 'high'").fetchone()
        projects = {str(label): int(jobs) for label, jobs in con.execute(PROJECTS_SQL).fetchall()}
    finally:
        con.close()
    assert located is not None and high is not None
    return expected, int(located[0]), int(high[0]), projects


def _shown(value: float | None, unit: str) -> str:
    """What the page shows for a value: a whole count with thousands separators, a rate in
    percent to one decimal."""
    if value is None:
        return "-"
    return f"{value * 100:.1f}%" if unit == "ratio" else f"{value:,.0f}"


def test_dashboard_without_a_snapshot_says_so_in_one_line(tmp_path: Path) -> None:
    """No snapshot yet (no successful run): exit 1 and one line naming what to run, no page."""
    env = cli_env(tmp_path)
    page = tmp_path / "page.html"
    database = tmp_path / "warehouse.duckdb"
    for command in (["dashboard", "--output", str(page)], ["metrics"]):
        result = run_cli([*command, "--database", str(database)], env, tmp_path)
        assert result.code == 1, result.describe()
        assert "no BI snapshot at" in result.err and "drone-sync run" in result.err, result.err
        assert len(result.err.strip().splitlines()) == 1, result.err
    assert not page.exists()
