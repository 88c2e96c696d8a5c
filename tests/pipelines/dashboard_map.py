"""What the dashboard page's map shows, read from its DOM in a browser session of
`headless_browser.browser_page`: separate job markers, clusters with the jobs and the jobs
with technical issues each holds, and the jobs listed by a cluster opened at the closest zoom.
The page draws the clusters and jobs of its view only, so these count what is in view. Also
the columns of the page's lists."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

MAP_STATE = """JSON.stringify({
  zoom: map.getZoom(),
  jobs: document.querySelectorAll('#map-canvas .leaflet-marker-icon.job').length,
  issueJobs: document.querySelectorAll('#map-canvas .job.status-technical_issues').length,
  clusters: [...document.querySelectorAll('#map-canvas .cluster [data-count]')].map(
    c => [Number(c.dataset.count), Number(c.dataset.issues)]),
  opened: [...document.querySelectorAll('#map-canvas .leaflet-popup [data-job-id]')].map(
    job => job.dataset.jobId),
  count: document.getElementById('map-count').textContent})"""


def jobs_shown(state: dict[str, Any]) -> int:
    """The jobs on the map: separate markers and those counted in clusters."""
    return int(state["jobs"]) + sum(count for count, _ in state["clusters"])


def settled_map(
    browser: Any, done: Callable[[dict[str, Any]], bool], poll: float = 0.5
) -> dict[str, Any]:
    """The map's state once `done` holds for it and it reads the same twice in a row, `poll`
    seconds apart (a zoom's animation is over), within a generous bound."""
    deadline = time.monotonic() + 120  # a bound for a map that never settles, not a pace
    before = None
    while True:
        state: dict[str, Any] = json.loads(browser.evaluate(MAP_STATE))
        if done(state) and state == before:
            return state
        assert time.monotonic() < deadline, state
        before = state
        time.sleep(poll)


def list_columns(browser: Any, section: str) -> list[str]:
    """The column headers of the list in the page's element `section` (`overdue`, `on-hold`)."""
    script = f"[...document.querySelectorAll('#{section} th')].map(th => th.textContent)"
    found: list[str] = json.loads(browser.evaluate(f"JSON.stringify({script})"))
    return found


def wait_ready(browser: Any, poll: float = 0.5) -> None:
    """Waits until the page has rendered (it marks its body `data-ready`), looking every
    `poll` seconds."""
    deadline = time.monotonic() + 300  # a bound for a page that never renders, not a pace
    while browser.evaluate("document.body && document.body.dataset.ready") != "true":
        assert time.monotonic() < deadline, browser.evaluate("document.body.innerText")
        time.sleep(poll)
