"""`python -m bench.dashboard`: the dashboard page of a large fleet, written and opened offline.

The page of a snapshot of `--workspaces` workspaces of `--jobs` jobs each (500 `small`
workspaces hold 572 jobs each: 286,000 jobs) is written by `render_page` from data of the shape
`collect` reads from a snapshot, then opened from `file://` in Debian's headless Chromium with
every host but 127.0.0.1 unresolvable, `--runs` times in a fresh browser each: the time from
navigation until the page marks itself rendered (`data-ready`, the map drawn), and until the
map's markers and clusters account for every job. Also the page's size, its render time in
Python, and that the page made no request but itself.

    python -m bench.dashboard --workspaces 500 --jobs 572 --runs 3
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from drone_ops_sync.pipelines.publish.dashboard import render_page
from tests.pipelines.dashboard_map import jobs_shown, settled_map, wait_ready
from tests.pipelines.headless_browser import CHROMIUM, browser_page

PROJECTS_PER_WORKSPACE = 60
STATUSES = ("planned", "in_progress", "completed", "technical_issues", "cancelled")
POLL_SECONDS = 0.05
"""How often the page is looked at: each figure is late by up to this (the tests' half a
second would hide most of a 3-second target)."""


def fleet_data(workspaces: int, jobs_each: int, seed: int = 39) -> dict[str, Any]:
    """The page's data: each workspace's projects in one region, its jobs spread around them."""
    rng = random.Random(seed)
    names = [f"ws-{n:03d}" for n in range(workspaces)]
    project_columns = ("workspace", "project_id", "name", "status", "is_archived")
    projects: dict[str, list[Any]] = {c: [] for c in (*project_columns, "start_date", "end_date")}
    job_columns = ("workspace", "job_id", "name", "project_id", "status", "priority", "is_open")
    jobs: dict[str, list[Any]] = {
        c: [] for c in (*job_columns, "latitude", "longitude", "end_date", "job_type_name")
    }
    metrics = []
    for number, workspace in enumerate(names):
        home = (rng.uniform(-45, 65), rng.uniform(-160, 170))
        places = []
        for p in range(PROJECTS_PER_WORKSPACE):
            project = f"P-{number}-{p}"
            values = (workspace, project, f"Survey {number}.{p}", "in_progress", False)
            for column, value in zip(projects, (*values, "2026-01-01", "2027-01-01"), strict=True):
                projects[column].append(value)
            places.append((project, home[0] + rng.uniform(-3, 3), home[1] + rng.uniform(-3, 3)))
        for index in range(jobs_each):
            project, lat, lon = places[index % len(places)]
            status = STATUSES[index % len(STATUSES)]
            row = (workspace, f"J-{number}-{index}", f"Job {index}", project, status)
            extra = (("high", "medium", "low")[index % 3], status != "completed")
            place = (lat + rng.uniform(-0.05, 0.05), lon + rng.uniform(-0.05, 0.05))
            for column, value in zip(jobs, (*row, *extra, *place, None, "x"), strict=True):
                jobs[column].append(value)
        metrics.append(
            {
                "workspace": workspace,
                "name": "jobs_total",
                "label": "Jobs",
                "unit": "count",
                "description": "jobs",
                "numerator": jobs_each,
                "denominator": None,
                "value": jobs_each,
                "measured_date": "2026-11-20",
            }
        )
    count = len(projects["project_id"])
    return {
        "dataset": "drone_ops",
        "snapshot": "fleet_bi.duckdb",
        "info": {},
        "as_of": [{"workspace": w, "data_as_of": "2026-11-20T08:00:00"} for w in names],
        "metrics": metrics,
        "projects": {**projects, "jobs_total": [1] * count, "jobs_open": [1] * count},
        "jobs": jobs,
        "flights": {},
        "history": {},
        "webhooks": {"workspace": [], "delivery_date": [], "deliveries": [], "failures": []},
    }


def open_once(page: Path, profile: Path, located: int) -> dict[str, float]:
    """One fresh browser: seconds to `data-ready` and to a map that shows every job."""
    with browser_page(profile) as browser:
        browser.call("Network.enable")
        started = time.monotonic()
        browser.call("Page.navigate", url=page.as_uri())
        wait_ready(browser, POLL_SECONDS)
        ready = time.monotonic() - started
        settled_map(browser, lambda state: jobs_shown(state) == located, POLL_SECONDS)
        settled = time.monotonic() - started
        urls = browser.requested_urls()
    if urls != [page.as_uri()]:
        raise SystemExit(f"the page requested more than itself: {urls[:5]}")
    return {"ready_seconds": ready, "all_jobs_on_map_seconds": settled}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard")
    parser.add_argument("--workspaces", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=572, help="jobs per workspace")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    data = fleet_data(args.workspaces, args.jobs)
    located = len(data["jobs"]["job_id"])
    with tempfile.TemporaryDirectory(prefix="drone-bench-dashboard-") as scratch:
        page = Path(scratch) / "fleet_dashboard.html"
        started = time.monotonic()
        page.write_text(render_page(data), encoding="utf-8")
        render = time.monotonic() - started
        runs = [open_once(page, Path(scratch) / f"profile-{n}", located) for n in range(args.runs)]
        size = page.stat().st_size
    result = {
        "benchmark": "dashboard",
        "workspaces": args.workspaces,
        "jobs": located,
        "page_bytes": size,
        "render_page_seconds": round(render, 3),
        "runs": runs,
        **{
            f"{key}_median": round(statistics.median(run[key] for run in runs), 3)
            for key in ("ready_seconds", "all_jobs_on_map_seconds")
        },
    }
    print(json.dumps(result, indent=2))
    if args.output is not None:
        args.output.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
