"""An event batch written in one SQL transaction reads exactly as the batch run's load, on
DuckDB and PostgreSQL, and dlt's next scd2 merges take it as ordinary history.

What is checked: a version applied by event and the same version loaded by a run (into a
second warehouse synced alike) agree column by column, all but the load id, the row id and the
validity start; the event's audit row names a load `_dlt_loads` records; a run with no change
then adds nothing (one current row per id) and a run after a change retires the event's row.
Events that reach a warehouse before its first run wait in the spool, and that run's tables
take them by SQL.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from drone_ops_sync.pipelines.listen.apply import AppliedMark, Applier, Router, apply_batch
from drone_ops_sync.pipelines.listen.spool import Position, Spool
from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from drone_ops_sync.sources.drone_ops.internal import ReceivedEvent, Seams
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import wait_until
from .run_seams import SeamTransport
from .warehouse_check import Warehouse, query

pytestmark = pytest.mark.e2e

LOAD_COLUMNS = {"_dlt_load_id", "_dlt_id", "_dlt_valid_from"}
"""What tells two loads of one version apart; every other column must be equal."""


def project_event(project: dict[str, Any], delivery_id: str) -> ReceivedEvent:
    """A `project.updated` delivery carrying the project as the API shows it."""
    event = {
        "delivery_id": delivery_id,
        "event": "project.updated",
        "timestamp": project["updated"],
        "workspace_id": "ws_test",
        "data": project,
    }
    return ReceivedEvent(event, int(time.time() * 1000), signed=True)


def sync(target: Target, sim: SimulatorHandle) -> SyncOutcome:
    overrides = {"base_url": sim.base_url, "api_key": sim.read_key}
    outcome = run_sync(target, config=read_source_config(overrides))
    assert outcome.ok, outcome.report.tables
    return outcome


def warehouse(target: Target) -> Warehouse:
    if target.destination == "postgres":
        return os.environ["DESTINATION__POSTGRES__CREDENTIALS"]
    assert target.database is not None
    return target.database


def rows(target: Target, where: str) -> list[dict[str, Any]]:
    return query(warehouse(target), f"SELECT * FROM {target.dataset}.projects WHERE {where}")


def second_target(target: Target, tmp_path: Path) -> Target:
    """Another warehouse of the same kind, for the run's own load of the same version."""
    if target.destination == "postgres":
        return Target(
            destination="postgres", dataset="drone_ops_run", pipelines_dir=tmp_path / "run-p"
        )
    return Target(database=tmp_path / "run.duckdb", pipelines_dir=tmp_path / "run-p")


def test_an_event_version_reads_as_the_run_loads_it(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path
) -> None:
    by_event, by_run = any_target, second_target(any_target, tmp_path)
    sync(by_event, tiny_sim)
    sync(by_run, tiny_sim)
    with httpx.Client(
        base_url=tiny_sim.base_url,
        headers={"Authorization": f"Bearer {tiny_sim.full_key}"},
        timeout=60,
    ) as api:
        project_id = api.get("/v1/projects").json()["projects"][0]["id"]
        patched = api.patch(f"/v1/projects/{project_id}", json={"name": "by event"})
        assert patched.status_code == 200, patched.text
        project = api.get(f"/v1/projects/{project_id}").json()

        assert apply_batch(Router(by_event), [project_event(project, "d_1")]) == {"applied": 1}
        assert sync(by_run, tiny_sim).report.table("projects").changed == 1

        current = f"id = '{project_id}' AND _dlt_valid_to IS NULL"
        [event_row], [run_row] = rows(by_event, current), rows(by_run, current)
        assert event_row["name"] == "by event"
        assert set(event_row) == set(run_row)
        differing = {name for name in event_row if event_row[name] != run_row[name]}
        assert differing <= LOAD_COLUMNS, {n: (event_row[n], run_row[n]) for n in differing}
        audit = query(
            warehouse(by_event),
            f"SELECT e.outcome, l.status FROM {by_event.dataset}._webhook_events e"
            f" JOIN {by_event.dataset}._dlt_loads l ON l.load_id = e._dlt_load_id",
        )
        assert audit == [{"outcome": "applied", "status": 0}]
        # written by the transaction, not by a dlt load: no package of dlt's carries it
        [event_load] = query(
            warehouse(by_event), f"SELECT _dlt_load_id FROM {by_event.dataset}._webhook_events"
        )
        packages = make_pipeline(by_event).list_completed_load_packages()
        assert event_load["_dlt_load_id"] not in packages

        # dlt's next merge: a run with no change finds the event's version unchanged
        quiet = sync(by_event, tiny_sim).report.table("projects")
        assert (quiet.new, quiet.changed, quiet.retired) == (0, 0, 0)
        assert _ids_with_several_current_rows(by_event) == []

        # and a run after a change retires it like any version
        assert api.patch(f"/v1/projects/{project_id}", json={"name": "by run"}).status_code == 200
        assert sync(by_event, tiny_sim).report.table("projects").changed == 1
    history = rows(by_event, f"id = '{project_id}' ORDER BY _dlt_valid_from")
    assert [(row["name"], row["_dlt_valid_to"] is None) for row in history[-2:]] == [
        ("by event", False),
        ("by run", True),
    ]
    assert history[-2]["_dlt_valid_to"] == history[-1]["_dlt_valid_from"]
    assert _ids_with_several_current_rows(by_event) == []


def _ids_with_several_current_rows(target: Target) -> list[dict[str, Any]]:
    return query(
        warehouse(target),
        f"SELECT id, count(*) AS n FROM {target.dataset}.projects WHERE _dlt_valid_to IS NULL"
        " GROUP BY id HAVING count(*) > 1",
    )


def test_events_applied_during_a_run_are_never_overwritten_by_its_listing(
    tiny_sim: SimulatorHandle, any_target: Target
) -> None:
    target = any_target
    sync(target, tiny_sim)
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
        listed = api.get("/v1/projects").json()["projects"]
        for project in listed:  # the run will list these versions as changed
            api.patch(f"/v1/projects/{project['id']}", json={"name": f"{project['id']} listed"})
        racing: list[str] = []

        def newer_versions_by_event(page: list[dict[str, Any]]) -> None:
            for project in page:
                project_id = project["id"]
                api.patch(f"/v1/projects/{project_id}", json={"name": f"{project_id} event"})
                newest = api.get(f"/v1/projects/{project_id}").json()
                outcome = apply_batch(Router(target), [project_event(newest, f"d_{project_id}")])
                assert outcome == {"applied": 1}
                racing.append(project_id)

        overrides = {"base_url": tiny_sim.base_url, "api_key": tiny_sim.read_key}
        seams = Seams(transport=SeamTransport(after_listing=newer_versions_by_event))
        outcome = run_sync(target, config=read_source_config(overrides), seams=seams)
        assert outcome.ok, outcome.report.tables
        assert racing, "the run listed no projects"
        # the report counts what the run wrote: not the listed versions the events beat
        written = {project["id"] for project in listed} - set(racing)
        assert outcome.report.table("projects").changed == len(written)
        api_now = {pid: api.get(f"/v1/projects/{pid}").json() for pid in racing}

    for project_id in racing:
        history = rows(target, f"id = '{project_id}' ORDER BY _dlt_valid_from")
        current = [row for row in history if row["_dlt_valid_to"] is None]
        assert [row["name"] for row in current] == [api_now[project_id]["name"]], history
        assert current[0]["name"] == f"{project_id} event"
        # no older version became current after a newer one
        updated = [row["updated"] for row in history]
        assert updated == sorted(updated), history
    assert _ids_with_several_current_rows(target) == []


def test_the_next_run_repairs_versions_from_events_the_api_never_sent(
    tiny_sim: SimulatorHandle, any_target: Target
) -> None:
    """Signed events whose project is newer than the API's own (a replaying or buggy sender,
    a skewed clock, a leaked secret) are applied; the next run replaces them with the API's
    versions, counts them as changed, and a further run finds nothing to do."""
    target = any_target
    sync(target, tiny_sim)
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
        projects = api.get("/v1/projects").json()["projects"][:3]
    day_ms = 86_400_000
    forged = [
        project_event(dict(p, name=f"forged {n}", updated=p["updated"] + day_ms), f"f_{n}")
        for n, p in enumerate(projects)
    ]
    assert apply_batch(Router(target), forged) == {"applied": len(forged)}
    ids = ", ".join(f"'{p['id']}'" for p in projects)
    current = f"id IN ({ids}) AND _dlt_valid_to IS NULL"
    assert {row["name"] for row in rows(target, current)} == {f"forged {n}" for n in range(3)}

    repaired = sync(target, tiny_sim).report.table("projects")
    assert (repaired.new, repaired.changed, repaired.retired) == (0, len(projects), 0)
    names = {row["id"]: row["name"] for row in rows(target, current)}
    assert names == {p["id"]: p["name"] for p in projects}
    assert _ids_with_several_current_rows(target) == []
    quiet = sync(target, tiny_sim).report.table("projects")
    assert (quiet.new, quiet.changed, quiet.retired) == (0, 0, 0)


HOLD_READ_ONLY = (
    "import duckdb, sys; connection = duckdb.connect(sys.argv[1], read_only=True);"
    " print('holding', flush=True); sys.stdin.read()"
)
"""A BI tool's way of holding the file: read-only, which still keeps every writer out."""


def test_a_bi_reader_holding_the_file_delays_events_with_one_line(
    tiny_sim: SimulatorHandle, target: Target, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sync(target, tiny_sim)
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    spool = Spool(tmp_path / "spool")
    names: dict[str, str] = {}
    try:
        with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
            for project in api.get("/v1/projects").json()["projects"]:
                project_id = project["id"]
                api.patch(f"/v1/projects/{project_id}", json={"name": f"{project_id} held"})
                newest = api.get(f"/v1/projects/{project_id}").json()
                event = project_event(newest, f"d_{project_id}").event
                spool.append(dict(event), int(time.time() * 1000), True)
                names[project_id] = newest["name"]
        assert target.database is not None
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_READ_ONLY, str(target.database)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        applier = Applier(target, spool, interval=0.1)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
            caplog.set_level(logging.INFO)
            caplog.clear()  # the sync's own log above is not the applier's
            applier.start()
            assert wait_until(lambda: applier.stats.last_error is not None, 120, interval=0.05)
            failed_since = applier.stats.batches
            time.sleep(1.0)  # several more ticks meet the held file
            assert applier.stats.batches == failed_since == 0
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
        try:
            assert wait_until(lambda: applier.stats.applied == len(names), 120, interval=0.05)
        finally:
            applier.stop()
    finally:
        spool.close()

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    [line] = warnings
    assert "open in another process" in line.getMessage()
    assert "\n" not in line.getMessage() and line.exc_info is None
    assert applier.stats.outcomes == {"applied": len(names)}
    assert applier.stats.last_error is None
    current = rows(target, "_dlt_valid_to IS NULL")
    assert {row["id"]: row["name"] for row in current if row["id"] in names} == names


def test_events_for_a_warehouse_not_synced_yet_wait_in_the_spool_for_its_first_run(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No `projects` table yet: the transaction cannot write as dlt would, so the batch is not
    applied. Nothing is written, the applied mark stays, `/health`'s last error names the
    workspace and what heals it, and the log says so once however many ticks meet it. The
    first run makes the tables; the same batch then applies by SQL, newest-wins against what
    the run loaded, with one current row per id."""
    target = any_target
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
        listed = api.get("/v1/projects").json()["projects"][:2]
        ahead, same = (api.get(f"/v1/projects/{p['id']}").json() for p in listed)
    # one version newer than the one the run will load, one the run loads too
    ahead = {**ahead, "name": "from the event", "updated": ahead["updated"] + 1}
    spool = Spool(tmp_path / "spool")
    try:
        for number, project in enumerate((ahead, same)):
            event = project_event(project, f"d_{number}").event
            spool.append(dict(event), int(time.time() * 1000), True)
        applier = Applier(target, spool, interval=1.0)
        caplog.set_level(logging.INFO)
        caplog.clear()
        try:
            assert [applier.tick() for _ in range(3)] == [False, False, False]
        finally:
            applier.router.file.release()
        error = applier.stats.last_error
        assert error is not None and "\n" not in error, error
        assert "workspace 'default' has no synced tables yet" in error, error
        assert "wait in the spool until its next `drone-sync run`" in error, error
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert warnings == [f"events not applied yet, will retry: {error}"], warnings
        assert applier.stats.batches == 0 and applier.position == Position()
        assert AppliedMark(spool.directory).load() == Position()
        tables = query(
            warehouse(target),
            "SELECT table_name FROM information_schema.tables"
            f" WHERE table_schema = '{target.dataset}'",
        )
        assert tables == [], "the receiver made no table"

        sync(target, tiny_sim)
        try:
            assert applier.tick() is True
        finally:
            applier.router.file.release()
    finally:
        spool.close()

    assert applier.stats.last_error is None
    assert applier.stats.outcomes == {"applied": 1, "not_newer": 1}
    assert AppliedMark(spool.directory).load() == applier.position != Position()
    names = {row["id"]: row["name"] for row in rows(target, "_dlt_valid_to IS NULL")}
    assert (names[ahead["id"]], names[same["id"]]) == ("from the event", same["name"])
    assert _ids_with_several_current_rows(target) == []
    events = query(
        warehouse(target),
        f"SELECT delivery_id, outcome, _dlt_load_id FROM {target.dataset}._webhook_events"
        " ORDER BY delivery_id",
    )
    assert [(e["delivery_id"], e["outcome"]) for e in events] == [
        ("d_0", "applied"),
        ("d_1", "not_newer"),
    ]
    # by SQL: a load `_dlt_loads` records as completed, which no dlt package made
    [event_load] = {e["_dlt_load_id"] for e in events}
    recorded = query(
        warehouse(target),
        f"SELECT status FROM {target.dataset}._dlt_loads WHERE load_id = '{event_load}'",
    )
    assert recorded == [{"status": 0}]
    assert event_load not in make_pipeline(target).list_completed_load_packages()
