"""What the generated histories found, each kept as a plain test with its history spelled out
(shrunk from the one Hypothesis printed), on DuckDB and on PostgreSQL.

1. A signed event the API never sent, a year ahead of the API's version, applied while a run
   walked: that run keeps it (newer than its listing), and the next run must replace it with
   the API's version: the API decides. A run that took any held version newer than its
   listing for an event's, whenever it had been written, would keep it for ever.
2. A creator shown differently by two records (a project's `created_by` carries
   `profile_picture`, a webhook's has none) is as the newest record shows it, whatever order
   the walk met them in; the suite's own truth (`tests/chaos/truth.py` `expected_users`) must
   read it the same way, or it fails a correct sync whose creator's newest record is a
   webhook.
3. A rolling run over a jobs table with no current row (every job deleted), on PostgreSQL: the
   warehouse's current rows were read through the driver's `fetchall`, which types a column by
   its values, so the empty `project_id` came back untyped and comparing it with the projects
   the run skipped raised `ArrowTypeError` out of the run, a traceback instead of a sync.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.chaos.truth import Reader, compare_with_api
from tests.pipelines.warehouse_check import api_snapshot

from .machine import SEED
from .world import Delivery, Place, World, open_world

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

YEAR_MS = 366 * 86_400_000


def _synced(world: World, **kwargs: Any) -> None:
    outcome, _ = world.run(**kwargs)
    assert outcome.ok, outcome.report.tables


def _versions(world: World, project_id: str) -> list[tuple[str, bool]]:
    """(name, current) of every version of a project, oldest first."""
    with Reader(world.warehouse, world.target.dataset) as reader:
        rows = reader.rows(
            f'SELECT name, _dlt_valid_to FROM "{world.target.dataset}".projects'
            f" WHERE id = '{project_id}' ORDER BY _dlt_valid_from"
        )
    return [(row["name"], row["_dlt_valid_to"] is None) for row in rows]


def _api_problems(world: World) -> list[str]:
    api = api_snapshot(world.sim.base_url, world.sim.read_key)
    return compare_with_api(world.warehouse, world.target.dataset, api).problems()


def test_a_future_event_applied_during_a_walk_is_replaced_by_the_next_run(place: Place) -> None:
    with open_world(place, SEED) as world:
        _synced(world)
        project = world.api.get("/v1/projects").json()["projects"][0]
        future = {**project, "name": "from the future", "updated": project["updated"] + YEAR_MS}
        event = {
            "delivery_id": "dlv_never_sent",
            "event": "project.updated",
            "timestamp": int(time.time() * 1000),
            "workspace_id": "ws_any",
            "data": future,
        }
        assert world.deliver(Delivery.signed(event)) == 202

        _synced(world, after_listing=lambda page: world.apply())
        assert _versions(world, project["id"])[-1] == ("from the future", True)

        _synced(world)
        assert _versions(world, project["id"])[-2:] == [
            ("from the future", False),
            (project["name"], True),
        ]
        assert _api_problems(world) == []


def test_a_creator_is_as_the_newest_record_shows_it(place: Place) -> None:
    with open_world(place, SEED) as world:
        _synced(world)
        api = api_snapshot(world.sim.base_url, world.sim.read_key)
        hook = max(api["webhooks"].values(), key=lambda record: record["created"])
        creator = hook["created_by"]["id"]
        made = [p for p in api["projects"].values() if p["created_by"]["id"] == creator]
        assert made and all(p["created"] < hook["created"] for p in made), "not this history"
        assert made[0]["created_by"]["profile_picture"] is not None
        with Reader(world.warehouse, world.target.dataset) as reader:
            [row] = reader.rows(
                f'SELECT profile_picture FROM "{world.target.dataset}".users'
                f" WHERE id = '{creator}'"
            )
        assert row["profile_picture"] is None
        assert _api_problems(world) == []


def test_a_rolling_run_over_a_jobs_table_with_no_current_row(place: Place) -> None:
    with open_world(place, SEED) as world:
        _synced(world)
        for job in api_snapshot(world.sim.base_url, world.sim.read_key)["jobs"].values():
            world.write("DELETE", f"/v1/projects/{job['project_id']}/jobs/{job['id']}")
        _synced(world)
        outcome, _ = world.run(slices=3)
        assert outcome.ok, outcome.report.tables
        scope = outcome.report.tables["jobs"].scope or ""
        walked, listed = (int(n) for n in re.findall(r"jobs of (\d+) of (\d+) projects", scope)[0])
        assert walked < listed, f"no project skipped, so nothing to compare: {scope}"
        assert _api_problems(world) == []
