"""A run that changed nothing keeps the current marts, and the snapshot's marts while refreshing
its freshness; anything that changed the warehouse or the project builds again
(pipelines/publish/build_record.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.cli import EXIT_OK, main
from testkit.simulator_process import SimulatorHandle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, list[dict[str, Any]]]:
    """One `drone-sync` command with JSON logs; its events by kind."""
    code = main([*args, "--log-format", "json"])
    events: dict[str, list[dict[str, Any]]] = {}
    for line in capsys.readouterr().out.splitlines():
        event = json.loads(line)
        events.setdefault(event["event"], []).append(event)
    assert code == EXIT_OK, events
    return events


def models_of(events: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    (summary,) = events["summary"]
    models: dict[str, Any] = summary["models"]
    assert models["ok"], models
    return models


def test_quiet_runs_keep_the_marts_and_any_change_rebuilds_them(
    tiny_sim: SimulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", tiny_sim.base_url)
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", tiny_sim.read_key)
    database = tmp_path / "w.duckdb"
    run = ("run", "--database", str(database))
    snapshot = tmp_path / "w_bi.duckdb"

    first = models_of(run_json(capsys, *run))
    assert first["rebuilt"] and first["models_built"] > 0 and first["tests_failed"] == 0
    published = snapshot.stat().st_mtime_ns

    quiet = run_json(capsys, *run)
    kept = models_of(quiet)
    assert not kept["rebuilt"] and kept["models_built"] == 0 and kept["built_at"]
    assert quiet["summary"][0]["rows_written"] == 0
    (event,) = quiet["snapshot"]
    assert event["ok"] and event["refreshed"] and event["path"] == str(snapshot), event
    assert snapshot.stat().st_mtime_ns != published, "the snapshot's freshness was refreshed"
    published = snapshot.stat().st_mtime_ns

    with tiny_sim.client(full=True) as client:
        project = client.get("/v1/projects").json()["projects"][0]
        client.patch(f"/v1/projects/{project['id']}", json={"name": "Renamed"}).raise_for_status()
    changed = run_json(capsys, *run)
    assert changed["summary"][0]["rows_written"] > 0
    assert models_of(changed)["rebuilt"]
    assert snapshot.stat().st_mtime_ns != published
    assert changed["snapshot"][0]["refreshed"] is False, "new marts: published whole"

    # data loaded by a run that built nothing is still new to the marts
    with tiny_sim.client(full=True) as client:
        client.patch(f"/v1/projects/{project['id']}", json={"name": "Renamed again"})
    skipped = run_json(capsys, *run, "--no-models")
    assert "models" not in skipped and skipped["summary"][0]["models"] is None
    assert models_of(run_json(capsys, *run))["rebuilt"]

    assert not models_of(run_json(capsys, *run))["rebuilt"]
    assert models_of(run_json(capsys, *run, "--force-models"))["rebuilt"]
    # `drone-sync models` always builds, and what it built counts as current afterwards
    assert models_of(run_json(capsys, "models", "--database", str(database)))["rebuilt"]
    assert not models_of(run_json(capsys, *run))["rebuilt"]
