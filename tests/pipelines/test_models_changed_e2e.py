"""A run builds the models downstream of the raw tables that changed since the last passing
build, and everything when it has to: the first build, after a failed one, after a change of
the dbt project, and once a UTC day (pipelines/publish/build_plan.py). A run that changed
nothing keeps the current marts, and the snapshot's marts while refreshing its freshness;
anything that changed the warehouse builds again (pipelines/publish/build_record.py).

The real simulator over HTTP, the real sync and dbt on DuckDB, in this process (`main`, JSON
output); what dbt built is read from the summary (dbt's run results), what the marts hold from
the warehouse and the BI snapshot directly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from drone_ops_sync.pipelines.cli import EXIT_FAILED, EXIT_OK, main
from testkit.simulator_process import SimulatorHandle

from .warehouse_check import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

JOB_MODELS = {"stg_drone_ops__job_versions", "int_jobs_current", "dim_jobs", "fct_job_occurrences"}
"""Models that read jobs: each must be rebuilt when only jobs changed."""
UNRELATED_MODELS = {
    "dim_webhooks",
    "fct_webhook_deliveries",
    "fct_webhook_delivery_health_daily",
    "dim_team_members",
    "dim_users",
}
"""Models that read no jobs: none may be rebuilt when only jobs changed."""


def run_json(
    capsys: pytest.CaptureFixture[str], *args: str, code: int = EXIT_OK
) -> dict[str, list[dict[str, Any]]]:
    """One `drone-sync` command with JSON logs; its events by kind."""
    exit_code = main([*args, "--log-format", "json"])
    events: dict[str, list[dict[str, Any]]] = {}
    # dbt prints a failing node's line itself, beside the JSON events
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            events.setdefault(event["event"], []).append(event)
    assert exit_code == code, events
    return events


def models_of(events: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The summary's `models` part."""
    (summary,) = events["summary"]
    models: dict[str, Any] = summary["models"]
    return models


def built(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """The `models` part of a command that succeeded, its build included."""
    models = models_of(run_json(capsys, *args))
    assert models["ok"], models
    return models


def rename_a_job(sim: SimulatorHandle, name: str) -> str:
    """Changes one job through the API (nothing else changes); returns its id."""
    with sim.client(full=True) as client:
        project = client.get("/v1/projects").raise_for_status().json()["projects"][0]
        jobs = client.get(f"/v1/projects/{project['id']}/jobs").raise_for_status().json()
        job_id = str(jobs["jobs"][0]["id"])
        client.patch(
            f"/v1/projects/{project['id']}/jobs/{job_id}", json={"name": name}
        ).raise_for_status()
    return job_id


def record_path(database: Path) -> Path:
    return database.parent / ".drone_sync" / database.name / "dbt" / "last_build.json"


def edit_record(database: Path, **fields: Any) -> None:
    """Rewrites fields of the build record, as time passing or an edited project would."""
    path = record_path(database)
    path.write_text(json.dumps(json.loads(path.read_text()) | fields))


@pytest.fixture
def run_args(
    tiny_sim: SimulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, ...]:
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", tiny_sim.base_url)
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", tiny_sim.read_key)
    return ("run", "--database", str(tmp_path / "w.duckdb"))


def test_a_run_rebuilds_what_changed_and_everything_when_it_has_to(
    tiny_sim: SimulatorHandle,
    tmp_path: Path,
    run_args: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One warehouse through its builds: the first (full), a quiet run (none), a change of
    jobs (what reads jobs), a run without models and the one after it, asked for (full), the
    `models` command, the first build of a day (full), a failed build (which leaves no record:
    the plan that follows, a full build, is `test_build_record.py`'s, as is an edited
    project's)."""
    database = tmp_path / "w.duckdb"
    snapshot = tmp_path / "w_bi.duckdb"
    first = built(capsys, *run_args)
    assert first["scope"] == "full" and first["reason"] == "no passing build recorded"
    assert first["rebuilt"] and first["models_built"] > 0 and first["tests_failed"] == 0
    every_model = set(first["built"])
    assert len(every_model) == first["models_built"] > 20 and every_model >= JOB_MODELS
    assert every_model >= UNRELATED_MODELS
    published = snapshot.stat().st_mtime_ns

    quiet_events = run_json(capsys, *run_args)
    quiet = models_of(quiet_events)
    assert quiet["ok"] and not quiet["rebuilt"] and quiet["built_at"]
    assert (quiet["scope"], quiet["models_built"], quiet["built"]) == ("none", 0, [])
    assert quiet_events["summary"][0]["rows_written"] == 0
    (event,) = quiet_events["snapshot"]
    assert event["ok"] and event["refreshed"] and event["path"] == str(snapshot), event
    assert snapshot.stat().st_mtime_ns != published, "the snapshot's freshness was refreshed"
    published = snapshot.stat().st_mtime_ns

    job_id = rename_a_job(tiny_sim, "Renamed for the partial build")
    changed_events = run_json(capsys, *run_args)
    changed = models_of(changed_events)
    assert changed["ok"] and changed["scope"] == "changed", changed
    assert changed["rebuilt"] and changed_events["summary"][0]["rows_written"] > 0
    assert changed["changed_tables"] == ["jobs"]
    built_now = set(changed["built"])
    assert built_now >= JOB_MODELS, "every model reading jobs is rebuilt"
    assert not built_now & UNRELATED_MODELS, "models that read no jobs are kept"
    assert changed["tests_failed"] == 0 and 0 < changed["tests_passed"] < first["tests_passed"]
    assert snapshot.stat().st_mtime_ns != published
    (published_event,) = changed_events["snapshot"]
    assert published_event["refreshed"], "the snapshot in place was refreshed, not copied whole"
    assert {name.split(".", 1)[1] for name in published_event["replaced"]} == {
        name for name in built_now if name.startswith(("dim_", "fct_"))
    }, "the rebuilt marts, and no other, were copied anew"

    # the marts hold the change, in the warehouse and in the BI snapshot published from it,
    # and the snapshot still has the marts that were not rebuilt
    (row,) = query(database, f"select name from drone_ops_marts.dim_jobs where job_id = '{job_id}'")
    assert row["name"] == "Renamed for the partial build"
    connection = duckdb.connect(str(snapshot), read_only=True)
    try:
        names = connection.execute(
            "select name from drone_ops_marts.dim_jobs where job_id = ?", [job_id]
        ).fetchall()
        webhooks = connection.execute(
            "select count(*) from drone_ops_marts.dim_webhooks"
        ).fetchone()
    finally:
        connection.close()
    assert names == [("Renamed for the partial build",)]
    assert webhooks is not None and webhooks[0] > 0

    # data loaded by a run that built nothing is still new to the marts
    rename_a_job(tiny_sim, "Renamed by a run without models")
    skipped = run_json(capsys, *run_args, "--no-models")
    assert "models" not in skipped and skipped["summary"][0]["models"] is None
    assert built(capsys, *run_args)["rebuilt"]
    assert not built(capsys, *run_args)["rebuilt"]

    # asked for: everything
    forced = built(capsys, *run_args, "--force-models")
    assert forced["rebuilt"] and forced["scope"] == "full" and set(forced["built"]) == every_model
    # `drone-sync models` always builds, and what it built counts as current afterwards
    assert built(capsys, "models", "--database", str(database))["rebuilt"]
    assert not built(capsys, *run_args)["rebuilt"]

    # the last full build was yesterday: today's first build is a full one, even when only
    # jobs changed (the status histories measure "until now")
    yesterday = (datetime.now(UTC) - timedelta(days=1)).isoformat(timespec="seconds")
    edit_record(database, full_built_at=yesterday)
    rename_a_job(tiny_sim, "Changed the next day")
    daily = built(capsys, *run_args)
    assert daily["scope"] == "full" and set(daily["built"]) == every_model
    assert daily["reason"] == "the first build of the day"
    assert daily["tests_passed"] == first["tests_passed"] < forced["tests_passed"], (
        "the unit tests ran when asked for only"
    )
    record = json.loads(record_path(database).read_text())
    assert datetime.fromisoformat(record["full_built_at"]).date() == datetime.now(UTC).date()

    # another job given a status the API does not have, then a real change of jobs: the
    # partial build runs the job models' tests, one fails, the run fails, no record is left
    renamed = rename_a_job(tiny_sim, "Changed before the failed build")
    con = duckdb.connect(str(database))
    try:
        (broken_id,) = con.execute(
            "select id from drone_ops.jobs where _dlt_valid_to is null and id <> ?"
            " order by id limit 1",
            [renamed],
        ).fetchone() or ("",)
        con.execute(
            "update drone_ops.jobs set status = 'no_such_status'"
            " where id = ? and _dlt_valid_to is null",
            [broken_id],
        )
    finally:
        con.close()
    failed = models_of(run_json(capsys, *run_args, code=EXIT_FAILED))
    assert failed["scope"] == "changed" and not failed["ok"] and failed["tests_failed"] >= 1
    assert not record_path(database).exists()
