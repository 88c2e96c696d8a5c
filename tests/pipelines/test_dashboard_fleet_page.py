"""The dashboard page at fleet scale (docs/dashboard.md), in Debian's headless Chromium with every
host but 127.0.0.1 unresolvable: 500 workspaces, jobs spread over the world, three with
technical issues among others, a project whose jobs are a few kilometres apart, three jobs at
one point and a day without any webhook delivery. The page is `render_page` of that data, as
`drone-sync dashboard` writes it (test_dashboard_page_e2e.py covers the way from a sync there).

Skipped unless /usr/bin/chromium is installed (`apt-get install chromium`)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.publish.dashboard import render_page

from .dashboard_map import jobs_shown, list_columns, settled_map, wait_ready
from .headless_browser import CHROMIUM, browser_page

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"
    ),
]

TODAY = date(2026, 11, 20)
OUTAGE = TODAY - timedelta(days=10)
WORKSPACES = [f"ws-{n:03d}" for n in range(500)]
SURVEY = ("ws-007", "P-7-1", 12)  # workspace, project, jobs: a grid 0.03 degrees apart
STACKED = ("ws-300", "P-300-1", 3)  # three jobs at one point
ISSUES = ("ws-200", "P-200-1", 20)  # twenty jobs within 0.1 degree, three of them with issues
LATE = "ws-123"  # the workspace whose last complete run is the oldest
LONG_NAME = "Inspection of the northern transmission corridor between the two substations " * 2

PICK = """(() => {{ const input = document.getElementById({id!r}); input.value = {value!r};
  input.dispatchEvent(new Event('input')); input.dispatchEvent(new Event('change'));
  return true; }})()"""
CLICK_CLUSTER = """[...document.querySelectorAll('#map-canvas .cluster [data-count]')]
  .find(c => c.dataset.count === '{count}').click(); true"""
# every section holds what it shows: nothing wider than its panel, nor than the window
OVERFLOW = """JSON.stringify({
  page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  sections: [...document.querySelectorAll('section')].filter(s => s.scrollWidth > s.clientWidth)
    .map(s => (s.id || s.querySelector('h2').textContent) + ': '
      + (s.scrollWidth - s.clientWidth))})"""
WEBHOOK_DAYS = """JSON.stringify([...document.querySelectorAll('#webhooks g[data-date]')].map(
  g => [g.dataset.date, Number(g.dataset.total), g.querySelectorAll('rect.zero').length]))"""
ASOF = "document.getElementById('asof').textContent"
TILE = "document.querySelector('.tile[data-metric=jobs_total] .value').textContent"


@pytest.fixture
def fleet_page(tmp_path: Path) -> Iterator[Any]:
    """The fleet's page open in the browser, rendered; on the way out, checks that the page
    itself was its only request (no tile, script, style, image or font)."""
    page = tmp_path / "fleet.html"
    page.write_text(render_page(_fleet()), encoding="utf-8")
    with browser_page(tmp_path / "profile") as browser:
        browser.call("Network.enable")
        browser.call("Page.navigate", url=page.as_uri())
        wait_ready(browser)
        yield browser
        browser.screenshot(tmp_path / "fleet.png")
        urls = browser.requested_urls()
    assert urls == [page.as_uri()], urls


def test_the_world_is_clustered_and_a_cluster_opens_into_its_jobs(fleet_page: Any) -> None:
    """Every job is a marker or counted in a cluster, overlaps are clustered, the three jobs
    with technical issues show (as markers or in red-ringed clusters), and a click on a
    cluster zooms in until what it held spreads out."""
    located = len(_fleet()["jobs"]["job_id"])
    world = settled_map(fleet_page, lambda s: jobs_shown(s) == located)
    assert world["count"].startswith(f"{located} jobs on the map, 3 with technical issues")
    assert len(world["clusters"]) + world["jobs"] < located / 4, world
    assert world["issueJobs"] + sum(issues for _, issues in world["clusters"]) == 3, world

    biggest = max(count for count, _ in world["clusters"])
    fleet_page.evaluate(CLICK_CLUSTER.format(count=biggest))
    opened = settled_map(fleet_page, lambda s: s["zoom"] > world["zoom"])
    assert max((count for count, _ in opened["clusters"]), default=0) < biggest, opened


def test_only_the_view_is_drawn_and_a_move_draws_the_next(fleet_page: Any) -> None:
    """Zoomed in on one place, the map holds the jobs about it, not the world's; moved to
    another, it holds that one's."""
    located = len(_fleet()["jobs"]["job_id"])
    for (lat, lon), (_, _, jobs) in (((35.05, 139.05), ISSUES), ((-33.9, 151.2), STACKED)):
        fleet_page.evaluate(f"map.setView([{lat}, {lon}], 8); true")
        view = settled_map(fleet_page, lambda s, jobs=jobs: jobs <= jobs_shown(s) < located / 10)
        assert view["zoom"] == 8, view


def test_a_project_is_zoomed_into_until_its_jobs_are_apart(fleet_page: Any) -> None:
    """One project: the map zooms to it and each of its jobs is a marker of its own; jobs at
    one point stay a cluster at any zoom, and a click opens it into the list of its jobs."""
    workspace, project, jobs = SURVEY
    fleet_page.evaluate(PICK.format(id="project", value=f"Survey 7 ({project}, {workspace})"))
    survey = settled_map(fleet_page, lambda s: s["jobs"] == jobs and not s["clusters"])
    assert survey["zoom"] >= 10 and survey["count"].startswith(f"{jobs} jobs on the map")

    workspace, project, jobs = STACKED
    fleet_page.evaluate(PICK.format(id="project", value=f"Survey 300 ({project}, {workspace})"))
    stacked = settled_map(fleet_page, lambda s: s["clusters"] == [[jobs, 0]] and s["jobs"] == 0)
    fleet_page.evaluate(CLICK_CLUSTER.format(count=jobs))
    number = WORKSPACES.index(workspace)
    listed = [f"J-{number}-{index}" for index in range(jobs)]
    opened = settled_map(fleet_page, lambda s: sorted(s["opened"]) == listed)
    # no zoom would split them, so none is made
    assert {**opened, "opened": []} == stacked, opened


def test_one_of_500_workspaces_is_chosen_by_typing(fleet_page: Any) -> None:
    options = fleet_page.evaluate("document.querySelectorAll('#workspace-list option').length")
    assert options == len(WORKSPACES)
    fleet_page.evaluate(PICK.format(id="workspace", value=ISSUES[0]))
    issues = settled_map(fleet_page, lambda s: jobs_shown(s) == ISSUES[2])
    assert issues["issueJobs"] + sum(n for _, n in issues["clusters"]) == 3, issues
    assert fleet_page.evaluate(TILE) == str(ISSUES[2])
    assert fleet_page.evaluate(ASOF) == f"Data as of {ISSUES[0]}: 2026-11-20 08:00 UTC"
    # the lists name a row's workspace only while rows of several can be shown
    assert list_columns(fleet_page, "on-hold") == ["kind", "id", "name", "status"]
    # a name that is no workspace is marked and changes nothing; empty is every workspace
    fleet_page.evaluate(PICK.format(id="workspace", value="ws-9999"))
    assert fleet_page.evaluate("document.getElementById('workspace').className") == "unknown"
    assert fleet_page.evaluate(TILE) == str(ISSUES[2])
    fleet_page.evaluate(PICK.format(id="workspace", value=""))
    settled_map(fleet_page, lambda s: jobs_shown(s) == len(_fleet()["jobs"]["job_id"]))
    assert list_columns(fleet_page, "on-hold") == ["kind", "workspace", "id", "name", "status"]
    # the fleet's header: when the data of the workspace furthest behind was last checked
    assert fleet_page.evaluate(ASOF) == (
        f"Data as of 2026-11-18 06:30 UTC (the oldest of 500 workspaces: {LATE})"
    )


def test_the_webhook_chart_draws_every_day_a_day_without_deliveries_as_zero(
    fleet_page: Any,
) -> None:
    webhook_days = json.loads(fleet_page.evaluate(WEBHOOK_DAYS))
    assert [day for day, _, _ in webhook_days] == [
        str(TODAY - timedelta(days=n)) for n in range(29, -1, -1)
    ]
    outage = [(total, zero) for day, total, zero in webhook_days if day == str(OUTAGE)]
    assert outage == [(0, 1)], webhook_days
    assert all(total > 0 for day, total, _ in webhook_days if day != str(OUTAGE))


def test_nothing_spills_out_at_800_px(fleet_page: Any) -> None:
    """Whichever workspace, with a project name of 160 characters in the menus."""
    fleet_page.call(
        "Emulation.setDeviceMetricsOverride",
        width=800,
        height=1000,
        deviceScaleFactor=1,
        mobile=False,
    )
    for chosen in ("", SURVEY[0], "ws-001"):
        fleet_page.evaluate(PICK.format(id="workspace", value=chosen))
        overflow = json.loads(fleet_page.evaluate(OVERFLOW))
        assert overflow == {"page": 0, "sections": []}, (chosen, overflow)


def _fleet() -> dict[str, Any]:
    """The page's data (the shape `collect` reads from a snapshot) of a fleet of 500 workspaces,
    one project of one job each at a random place, and the three special projects."""
    rng = random.Random(39)
    columns = ("workspace", "project_id", "name", "status", "is_archived", "start_date")
    projects: dict[str, list[Any]] = {name: [] for name in (*columns, "end_date")}
    jobs: dict[str, list[Any]] = {
        name: []
        for name in (
            *("workspace", "job_id", "name", "project_id", "status", "priority", "is_open"),
            *("latitude", "longitude", "end_date", "job_type_name"),
        )
    }
    metrics, webhooks = [], {"workspace": [], "delivery_date": [], "deliveries": [], "failures": []}
    for number, workspace in enumerate(WORKSPACES):
        project = f"P-{number}-1"
        name = LONG_NAME if number == 1 else f"Survey {number}"
        for column, value in zip(
            (*columns, "end_date"),
            (workspace, project, name, "in_progress", False, "2026-01-01", "2027-01-01"),
            strict=True,
        ):
            projects[column].append(value)
        lat, lon = rng.uniform(-45, 65), rng.uniform(-160, 170)
        places = [(lat + rng.uniform(-0.05, 0.05), lon + rng.uniform(-0.05, 0.05))]
        if workspace == SURVEY[0]:
            places = [(47 + 0.03 * (i // 4), 8 + 0.04 * (i % 4)) for i in range(SURVEY[2])]
        elif workspace == STACKED[0]:
            places = [(-33.9, 151.2)] * STACKED[2]
        elif workspace == ISSUES[0]:
            places = [(35 + rng.uniform(0, 0.1), 139 + rng.uniform(0, 0.1)) for _ in range(20)]
        for index, (job_lat, job_lon) in enumerate(places):
            status = "technical_issues" if workspace == ISSUES[0] and index < 3 else "planned"
            row = (workspace, f"J-{number}-{index}", f"Job {index}", project, status)
            for column, value in zip(
                jobs,
                (*row, ("high", "medium", "low")[index % 3], True, job_lat, job_lon, None, "x"),
                strict=True,
            ):
                jobs[column].append(value)
        metrics.append(
            {
                "workspace": workspace,
                "name": "jobs_total",
                "label": "Jobs",
                "unit": "count",
                "description": "jobs",
                "numerator": len(places),
                "denominator": None,
                "value": len(places),
                "measured_date": str(TODAY),
            }
        )
        if number < 3:  # webhook deliveries on every day of the window but one
            for days_ago in range(30):
                day = TODAY - timedelta(days=days_ago)
                if day != OUTAGE:
                    for column, value in zip(webhooks, (workspace, str(day), 5, 1), strict=True):
                        webhooks[column].append(value)
    return {
        "dataset": "drone_ops",
        "snapshot": "fleet_bi.duckdb",
        "info": {},
        "as_of": [
            {
                "workspace": w,
                "data_as_of": "2026-11-18T06:30:00" if w == LATE else "2026-11-20T08:00:00",
            }
            for w in WORKSPACES
        ],
        "metrics": metrics,
        "projects": {**projects, "jobs_total": [1] * 500, "jobs_open": [1] * 500},
        "jobs": jobs,
        "flights": {},
        "history": {},
        "webhooks": webhooks,
    }
