"""The generated workspace tells one consistent story (docs/simulator-data.md).

Checked on what the API serves: at `small` over HTTP, at `tenth` (the benchmark's 2,000
projects) through the store's own page builders, which return the bytes HTTP would. The rules
are written out here, independently of the generator: dates against statuses (now and at every
delivered event), jobs against their projects, delivery payloads against project histories,
names against places, capture types against job names and types.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

import orjson
import pytest

from drone_ops_sync.simulator.catalog import PLACES, SITE_KINDS
from drone_ops_sync.simulator.store import Options, Store
from testkit.simulator_process import running_simulator

from .helpers import walk

pytestmark = pytest.mark.e2e

ANCHOR = date(2026, 3, 15)
ANCHOR_MS = int(datetime(2026, 3, 15, tzinfo=UTC).timestamp()) * 1000
PRE_START = {"draft", "not_started", "planned"}
PAUSES = {"on_hold", "weather_delayed", "technical_issues"}
CLOSED = {"completed", "cancelled", "aborted"}
# a word in a job's name, and the capture type the job must then record
NAME_WORDS = {
    "thermal": "thermal_inspection",
    "lidar": "lidar_scan",
    "orthomosaic": "orthomosaic",
    "video": "video_capture",
    "panorama": "panorama",
    "360": "ground_360",
    "3d": "3d_mapping",
    "volumetric": "3d_mapping",
}
# job types named after a capture type record that capture type
TYPE_CAPTURES = {"drone_inspection", "thermal_inspection", "3d_mapping"}
MAX_KM_FROM_PLACE = 60.0


def day(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None


def on(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date()


def status_fits_dates(status: str, start: date, end: date | None, today: date) -> bool:
    """A status is only possible on `today` given the dates (the same rules for both records).

    Not started yet: starts today or later. In progress: started, not past its end. Completed:
    started and ended (on or before today). Paused or aborted: started. Cancelled, other: any.
    """
    if status in PRE_START:
        return start >= today
    if status == "in_progress":
        return start <= today and (end is None or end >= today)
    if status == "completed":
        return start <= today and (end is None or end <= today)
    if status in PAUSES or status == "aborted":
        return start <= today
    return True


def job_fits_project(job_status: str, project_status: str) -> bool:
    if project_status in PRE_START:
        return job_status in PRE_START or job_status == "cancelled"
    if project_status in CLOSED:
        return job_status in CLOSED
    if project_status in PAUSES:
        return job_status != "in_progress"
    return True


def km(a: tuple[float, float], b: tuple[float, float]) -> float:
    la1, lo1, la2, lo2 = map(math.radians, (*a, *b))
    h = (
        math.sin((la2 - la1) / 2) ** 2
        + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    )
    return 2 * 6371 * math.asin(math.sqrt(h))


@dataclass
class Workspace:
    """Everything the API serves, as parsed JSON."""

    projects: list[dict[str, Any]]
    jobs: list[dict[str, Any]]
    job_types: list[dict[str, Any]]
    team: list[dict[str, Any]]
    webhooks: list[dict[str, Any]]
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def served_by_store(store: Store) -> Workspace:
    """Walk every list through the store's page builders (the bytes HTTP would send)."""

    def pages(fetch: Callable[[str | None], bytes], key: str) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            body = orjson.loads(fetch(cursor))
            yield from body[key]
            cursor = body["cursor"]
            if cursor is None:
                return

    projects = [
        *pages(lambda c: store.projects.page(c, None, None), "projects"),
        *pages(lambda c: store.projects.page(c, None, "true"), "projects"),
    ]
    jobs = [j for p in projects for j in pages(partial(store.jobs.page, p["id"]), "jobs")]
    webhooks = list(pages(store.webhooks.page, "webhooks"))
    logs = {w["id"]: list(pages(partial(store.webhooks.get, w["id"]), "logs")) for w in webhooks}
    return Workspace(
        projects,
        jobs,
        list(pages(store.job_types.page, "job_types")),
        list(pages(lambda c: store.team.page(c, None), "team")),
        webhooks,
        logs,
    )


@pytest.fixture(scope="module")
def small() -> Iterator[tuple[Workspace, int]]:
    """`small` over HTTP, with the number of deleted projects' ids answering 404."""
    args = ("--anchor-date", ANCHOR.isoformat())
    with running_simulator(seed=7, scale="small", extra_args=args) as h, h.client(False) as c:
        projects = walk(c, "/v1/projects", "projects")
        projects += walk(c, "/v1/projects?archived=true", "projects")
        jobs = [j for p in projects for j in walk(c, f"/v1/projects/{p['id']}/jobs", "jobs")]
        webhooks = walk(c, "/v1/webhooks", "webhooks")
        logs = {w["id"]: walk(c, f"/v1/webhooks/{w['id']}", "logs") for w in webhooks}
        ws = Workspace(
            projects,
            jobs,
            walk(c, "/v1/job-types", "job_types"),
            walk(c, "/v1/team", "team"),
            webhooks,
            logs,
        )
        served = {p["id"] for p in projects}
        gone = {
            orjson.loads(entry["request_payload"])["data"]["id"]
            for entries in logs.values()
            for entry in entries
        } - served
        missing = sum(c.get(f"/v1/projects/{pid}").status_code == 404 for pid in gone)
    assert missing == len(gone)
    yield ws, len(gone)


@pytest.fixture(scope="module")
def tenth() -> Workspace:
    options = Options(
        seed=42,
        scale="small",
        anchor=ANCHOR,
        projects=2_000,
        jobs_per_project=20,
        members=200,
        webhooks=5,
        logs_per_webhook=10_000,
    )
    return served_by_store(Store(options))


def check_projects(ws: Workspace) -> None:
    members = {m["id"]: m for m in ws.team}
    for p in ws.projects:
        start, end = day(p["start_date"]), day(p["end_date"])
        assert start is not None
        assert end is None or end > start, p
        assert p["created"] <= p["updated"] < ANCHOR_MS, p
        assert status_fits_dates(p["status"], start, end, ANCHOR), p
        if p["status"] == "completed":  # completed means in the past
            assert start < ANCHOR and (end is None or end < ANCHOR), p
        assert not p["archived"] or p["status"] in (*CLOSED, "other"), p
        assert (p["status"] == "other") == (p["other_status_reason"] is not None), p
        creator = p["created_by"]
        if creator and creator.get("type") != "api_key":
            assert members[creator["id"]]["created"] <= p["created"], p
        place = next(pl for pl in PLACES if p["name"].startswith(pl.name))
        kinds = [
            k
            for k, kind in enumerate(SITE_KINDS)
            if kind.name_pattern.split("{place}")[1].split("{n}")[0].strip() in p["name"]
        ]
        assert kinds and any(k in place.kinds for k in kinds), p["name"]


def check_jobs(ws: Workspace) -> None:
    projects = {p["id"]: p for p in ws.projects}
    types = {t["id"] for t in ws.job_types}
    assert ws.jobs
    for j in ws.jobs:
        p = projects[j["project_id"]]
        start, end = day(j["start_date"]), day(j["end_date"])
        p_start, p_end = day(p["start_date"]), day(p["end_date"])
        assert start is not None and p_start is not None
        assert p_start <= start and (end is None or end >= start), (j, p)
        if p_end is not None:
            assert end is not None and end <= p_end, (j, p)
        assert p["created"] <= j["created"] <= j["updated"] < ANCHOR_MS, (j, p)
        assert start >= on(j["created"]) - timedelta(days=182), j
        assert status_fits_dates(j["status"], start, end, ANCHOR), j
        if j["status"] == "completed":
            assert start < ANCHOR and (end is None or end < ANCHOR), j
        assert job_fits_project(j["status"], p["status"]), (j["status"], p["status"])
        assert j["type"] in types
        captures = j["capture_types"]
        assert len(set(captures)) == len(captures) <= 20
        name = j["name"].lower().rsplit(" #", 1)[0]  # the task, without its number
        for word, capture in NAME_WORDS.items():
            assert word not in name or capture in captures, j
        assert j["type"] not in TYPE_CAPTURES or j["type"] in captures, j
        if j["latitude"] is not None:
            place = next(pl for pl in PLACES if p["name"].startswith(pl.name))
            distance = km((place.lat, place.lon), (j["latitude"], j["longitude"]))
            assert distance <= MAX_KM_FROM_PLACE, (j["name"], p["name"], distance)


def check_deliveries(ws: Workspace, logs_per_webhook: int) -> int:
    """Returns how many delivered projects the lists no longer serve (deleted)."""
    projects = {p["id"]: p for p in ws.projects}
    members = {m["id"]: m for m in ws.team}
    gone: set[str] = set()
    for w in ws.webhooks:
        logs = ws.logs[w["id"]]
        assert len(logs) == logs_per_webhook == len({e["id"] for e in logs})
        keys = [(e["created"], e["id"]) for e in logs]
        assert keys == sorted(keys, reverse=True), "log pages are newest first"
        assert set(w["created_by"]) == {"id", "email", "first_name", "last_name"}
        assert all(isinstance(v, str) for v in w["created_by"].values())
        assert members[w["created_by"]["id"]]["created"] <= w["created"]
        assert w["failure_count"] == sum(e["status"] == "failed" for e in logs)
        assert w["last_triggered_at"] == max(e["created"] for e in logs)
        history: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entry in logs:
            payload = orjson.loads(entry["request_payload"])
            data, ts = payload["data"], payload["timestamp"]
            assert payload["event"] == entry["event_type"] in w["event_types"]
            assert w["created"] <= ts <= entry["created"] < ANCHOR_MS
            assert data["created"] <= ts and data["updated"] <= ts, payload
            start, end = day(data["start_date"]), day(data["end_date"])
            assert start is not None
            assert status_fits_dates(data["status"], start, end, on(ts)), payload
            history[data["id"]].append(payload)
        for pid, events in history.items():
            events.sort(key=lambda e: e["timestamp"])
            kinds = [e["event"] for e in events]
            assert kinds.count("project.created") <= 1, pid
            assert "project.created" not in kinds[1:], pid
            first = events[0]["data"]
            if "project.created" in w["event_types"] and first["created"] >= w["created"]:
                assert kinds[0] == "project.created", pid
            stamps = [e["data"]["updated"] for e in events]
            assert stamps == sorted(set(stamps)), pid
            if pid not in projects:
                gone.add(pid)
            elif "project.updated" in w["event_types"]:
                assert events[-1]["data"] == projects[pid], pid
    return len(gone)


def test_small_workspace_is_consistent(small: tuple[Workspace, int]) -> None:
    ws, gone = small
    assert len(ws.projects) == 60 and len(ws.jobs) == 593
    check_projects(ws)
    check_jobs(ws)
    assert check_deliveries(ws, 500) == gone > 0


def test_tenth_workspace_is_consistent(tenth: Workspace) -> None:
    assert len(tenth.projects) == 2_000 and len(tenth.webhooks) == 5
    assert {p["status"] for p in tenth.projects} >= {
        "planned",
        "in_progress",
        "completed",
        "cancelled",
        "on_hold",
        "other",
    }
    check_projects(tenth)
    check_jobs(tenth)
    assert check_deliveries(tenth, 10_000) > 0
