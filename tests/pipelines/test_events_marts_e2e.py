"""The marts and the BI snapshot follow applied events, end to end over real HTTP: the
simulator delivers a project change to `drone-sync listen`, which applies it and then rebuilds
the models downstream of projects and republishes the snapshot and its dashboard page, with no
`drone-sync run` in between (docs/events.md, "Marts that follow").

What is checked: the snapshot's `dim_projects` shows the new name and the dashboard page
beside it embeds it; every mart of the snapshot equals the warehouse's; `/health` reports the
partial build; the build record is left as the scheduled build wrote it, so the next
`drone-sync run` still builds what depends on projects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from drone_ops_sync.pipelines.publish.build_record import dbt_folder, read_record
from testkit.simulator_process import running_simulator

from .cli_helpers import EXIT_OK, cli_env, run_cli, wait_until
from .listen_process import applying_listener

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WAIT_S = 300.0
"""A bound for a stuck follower, not a pace: each wait ends as soon as its condition holds."""
NEW_NAME = "followed by the marts"


def _snapshot_name(snapshot: Path, project_id: str) -> str | None:
    """The project's name in the snapshot's projects mart, read as a BI tool would."""
    try:
        with duckdb.connect(str(snapshot), read_only=True) as con:
            row = con.execute(
                "select name from drone_ops_marts.dim_projects where project_id = ?",
                [project_id],
            ).fetchone()
    except duckdb.Error:  # between the rename and the open: the next poll reads it
        return None
    return None if row is None else str(row[0])


def _marts(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the marts schema, its rows sorted."""
    with duckdb.connect(str(database), read_only=True) as con:
        names = con.execute(
            "select table_name from information_schema.tables"
            " where table_schema = 'drone_ops_marts' and table_type = 'BASE TABLE'"
        ).fetchall()
        return {
            name: con.execute(f"select * from drone_ops_marts.{name} order by all").fetchall()
            for (name,) in names
        }


def _health(url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{url}/health", timeout=60).json())


def test_a_project_event_reaches_the_snapshot_and_the_dashboard(tmp_path: Path) -> None:
    with running_simulator(
        seed=23, scale="tiny", admin=True, extra_args=["--delivery-timeout", "60"]
    ) as sim:
        env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
        database = tmp_path / "w.duckdb"
        first = run_cli(["run", "--database", str(database)], env, tmp_path)
        assert first.code == EXIT_OK, first.describe()
        snapshot, page = tmp_path / "w_bi.duckdb", tmp_path / "w_bi_dashboard.html"
        assert snapshot.is_file() and page.is_file()
        folder = dbt_folder(tmp_path / ".drone_sync" / "w.duckdb")
        recorded = read_record(folder)
        assert recorded is not None

        headers = {"Authorization": f"Bearer {sim.full_key}"}
        with (
            httpx.Client(base_url=sim.base_url, headers=headers, timeout=60) as api,
            applying_listener(tmp_path, env, 0.5, "follow", extra=("--follow-marts", "1")) as (
                url,
                _,
            ),
        ):
            created = api.post(
                "/v1/webhooks",
                json={"name": "r", "url": f"{url}/events", "event_types": ["project.updated"]},
            )
            assert created.status_code == 201, created.text
            project_id = api.get("/v1/projects").json()["projects"][0]["id"]
            assert NEW_NAME not in page.read_text()
            api.patch(f"/v1/projects/{project_id}", json={"name": NEW_NAME}).raise_for_status()
            followed = wait_until(
                lambda: _snapshot_name(snapshot, project_id) == NEW_NAME, WAIT_S, interval=0.5
            )
            health = _health(url)
            assert followed, (health, (tmp_path / "follow.log").read_text()[-3000:])
            assert wait_until(lambda: _health(url)["marts"]["builds"] >= 1, WAIT_S)
            marts = _health(url)["marts"]
        assert NEW_NAME in page.read_text()
        # published as a refresh of the snapshot in place: every mart, rebuilt or kept, equals
        # the warehouse's
        published, built = _marts(snapshot), _marts(database)
        assert published.keys() >= built.keys() and len(built) > 10
        assert {name: published[name] for name in built} == built
        assert marts["last_ok"] is True and marts["last_error"] is None, marts
        assert Path(marts["last_snapshot"]).resolve() == snapshot.resolve(), marts
        # the partial build wrote no record: the scheduled run still builds projects' models
        assert read_record(folder) == recorded
        second = run_cli(
            ["run", "--database", str(database), "--log-format", "json"], env, tmp_path
        )
        assert second.code == EXIT_OK, second.describe()
        models = json.loads(second.out.strip().splitlines()[-1])["models"]
        assert models["scope"] in {"changed", "full"}, models
        assert "dim_projects" in models["built"], models
