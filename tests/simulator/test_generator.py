"""Determinism (same seed -> identical bytes across processes) and the required edge rows."""

from __future__ import annotations

import time
from collections import Counter

import httpx
import pytest

from drone_ops_sync.simulator.store import Options, Store
from testkit.simulator_process import running_simulator

from .helpers import walk

pytestmark = pytest.mark.e2e

ARGS = ("--anchor-date", "2026-03-15")


def snapshot(c: httpx.Client) -> list[bytes]:
    """Raw bytes of every GET list page and a few single reads."""
    out: list[bytes] = []
    for path, key in [
        ("/v1/projects", "projects"),
        ("/v1/projects?archived=true", "projects"),
        ("/v1/job-types", "job_types"),
        ("/v1/team", "team"),
        ("/v1/webhooks", "webhooks"),
    ]:
        r = c.get(path)
        out.append(r.content)
        for row in walk(c, path, key):
            if key == "projects":
                out.append(c.get(f"/v1/projects/{row['id']}/jobs").content)
            if key == "webhooks":
                out.append(c.get(f"/v1/webhooks/{row['id']}").content)
    return out


def test_same_seed_same_bytes_different_seed_different() -> None:
    with running_simulator(seed=11, scale="tiny", extra_args=ARGS) as a, a.client(False) as ca:
        first = snapshot(ca)
    with running_simulator(seed=11, scale="tiny", extra_args=ARGS) as b, b.client(False) as cb:
        second = snapshot(cb)
    with running_simulator(seed=12, scale="tiny", extra_args=ARGS) as c, c.client(False) as cc:
        other = snapshot(cc)
    assert first == second
    assert first != other
    assert sum(len(x) for x in first) > 10_000


def test_edge_rows_present_at_tiny() -> None:
    s = Store(Options(seed=42, scale="tiny"))
    projects = list(s.state.projects.values())
    assert len(projects) == 5 and len(s.state.jobs) == 20 and len(s.state.team) == 8
    assert any(p["archived"] for p in projects)
    assert any(p["status"] == "other" and p["other_status_reason"] for p in projects)
    assert any(p["end_date"] is None for p in projects)
    assert any(len(p["description"]) == 1000 for p in projects)
    assert any(not p["description"].isascii() for p in projects)
    assert any((p["created_by"] or {}).get("type") == "api_key" for p in projects)
    creator_fields = {"id", "email", "first_name", "last_name"}
    assert all(set(w["created_by"]) == creator_fields for w in s.state.webhooks.values())
    assert sum(len(v) for v in s.state.logs.values()) == 30
    roles = Counter(m["role"] for m in s.state.team.values())
    assert roles["pilot"] >= 2 and roles["root"] == 1 and roles["client"] >= 1


def test_small_scale_content() -> None:
    s = Store(Options(seed=1, scale="small"))
    c = s.counts()
    assert c["projects"] == 60 and c["team"] == 25 and c["webhooks"] == 2 and c["logs"] == 1000
    assert 400 <= c["jobs"] <= 800
    jobs = [s.state.job_row(j) for j in list(s.state.jobs)]
    assert any(j["latitude"] is None for j in jobs)
    assert {j["recurring_frequency"] for j in jobs} >= {None, "daily", "weekly", "monthly"}
    assert any(not jt["is_predefined"] for jt in s.state.job_types.values())
    assert all(j["type"] in s.state.job_types for j in jobs)


def test_count_overrides_and_generation_speed() -> None:
    # the CPU this process spent, not the wall clock: generation is single-threaded work, and
    # on a runner shared with other work the wall clock also counts the time others had the CPU
    start = time.process_time()
    s = Store(
        Options(seed=3, scale="tiny", projects=2000, jobs_per_project=20, logs_per_webhook=20000)
    )
    cpu_seconds = time.process_time() - start
    c = s.counts()
    assert c["projects"] == 2000 and 30_000 <= c["jobs"] <= 50_000 and c["logs"] == 20_000
    assert cpu_seconds < 10  # large (10x projects, 25x logs) is measured by bench/serve.py
