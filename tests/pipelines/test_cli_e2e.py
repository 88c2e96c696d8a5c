"""The CLI as a user runs it: check, run, secrets hygiene, crash repair, the demo."""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from drone_ops_sync.pipelines.cli import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, main
from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import running_simulator

from .test_sync_e2e import assert_equals_api

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def canary() -> str:
    return f"canary-{secrets.token_hex(12)}"


@pytest.fixture(scope="module")
def canary_sim(canary: str) -> Iterator[Any]:
    """One simulator for the tests that only read it (a test that sets faults resets them)."""
    with running_simulator(
        seed=5, scale="tiny", admin=True, extra_args=("--read-key", canary)
    ) as handle:
        yield handle


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch, canary_sim: Any, canary: str) -> Any:
    """Configured the way a user would: environment variables, key only there."""
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", canary_sim.base_url)
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", canary)
    return canary_sim


def test_check_reports_scope_and_reachability(
    configured: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["check"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "scope read_only" in out
    for name in ("projects", "archived projects", "team_members", "job_types", "jobs", "webhooks"):
        assert f"ok   {name}" in out
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", configured.full_key)
    assert main(["check"]) == EXIT_OK
    assert "scope full_access" in capsys.readouterr().out
    counts_before = configured.counts()
    assert configured.counts() == counts_before, "check writes nothing"


def test_check_names_what_to_fix(
    configured: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", "not-the-key")
    assert main(["check"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "401" in err and "sources.drone_ops.api_key" in err
    monkeypatch.delenv("SOURCES__DRONE_OPS__BASE_URL")
    assert main(["check"]) == EXIT_CONFIG
    assert "sources.drone_ops.base_url" in capsys.readouterr().err


def test_plain_http_is_refused_for_remote_hosts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", "http://api.example.com")
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", "k")
    code = main(["run", "--database", str(tmp_path / "w.duckdb"), "--no-models"])
    assert code == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "sources.drone_ops.base_url" in err and "https" in err


def test_database_named_like_the_dataset_is_refused(
    configured: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--database", str(tmp_path / "drone_ops.duckdb"), "--no-models"])
    assert code == EXIT_CONFIG
    assert "Rename the file" in capsys.readouterr().err


def test_api_key_never_leaves_the_process(
    configured: Any,
    canary: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Logs, exceptions, dlt state, traces, load packages and the database never hold it."""
    caplog.set_level(logging.DEBUG)
    database = tmp_path / "w.duckdb"
    assert main(["-v", "run", "--database", str(database), "--no-models"]) == EXIT_OK
    configured.set_faults("503:1.0")
    os.environ["SOURCES__DRONE_OPS__RETRY_BUDGET_SECONDS"] = "1"
    try:
        assert main(["-v", "run", "--database", str(database), "--no-models"]) == EXIT_FAILED
    finally:
        del os.environ["SOURCES__DRONE_OPS__RETRY_BUDGET_SECONDS"]
        configured.set_faults(None)
    out = capsys.readouterr()
    assert "503" in out.out + caplog.text, "the failing run was logged"
    assert canary not in out.out + out.err
    assert canary not in caplog.text
    needle = canary.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any("trace" in p.name for p in files), "the dlt trace was written and searched"
    assert any("state" in p.name for p in files), "the dlt state was written and searched"
    for path in files:
        assert needle not in path.read_bytes(), f"key found in {path}"
    con = duckdb.connect(str(database))
    try:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
        for schema, table in tables:
            rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            assert canary not in repr(rows), f"key found in {schema}.{table}"
    finally:
        con.close()


def test_interrupted_load_is_repaired_by_the_next_run(
    tiny_sim: Any, sync: Any, target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load dies in the middle (after some tables); the next run converges to the API."""
    from dlt.common.destination.exceptions import DestinationTerminalException
    from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient

    run = sync(tiny_sim)
    assert run().ok
    with tiny_sim.client(full=True) as client:
        projects = client.get("/v1/projects").json()["projects"]
        client.patch(f"/v1/projects/{projects[0]['id']}", json={"status": "on_hold"})
        client.delete(f"/v1/projects/{projects[1]['id']}")
    original = DuckDbSqlClient.execute_sql
    crashed: list[str] = []

    def crash_on_jobs_merge(self: Any, sql: Any, *args: Any, **kwargs: Any) -> Any:
        text = sql if isinstance(sql, str) else ""
        if "UPDATE" in text and '"jobs"' in text:
            crashed.append(text)
            raise DestinationTerminalException("simulated crash during the jobs merge")
        return original(self, sql, *args, **kwargs)

    monkeypatch.setattr(DuckDbSqlClient, "execute_sql", crash_on_jobs_merge)
    failed = run()
    monkeypatch.setattr(DuckDbSqlClient, "execute_sql", original)
    assert crashed, "the simulated crash fired"
    assert not failed.ok and failed.load_error
    repaired = run()
    assert repaired.ok, repaired.report.tables
    assert_equals_api(tiny_sim, target)


@pytest.mark.slow
def test_demo_runs_from_a_fresh_directory(tmp_path: Path) -> None:
    """`drone-sync demo` with nothing configured: two syncs, queries, models, metrics,
    questions, and the dashboard page."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SOURCES__", "DESTINATION__")) and k not in ("COLUMNS", "LINES")
    }
    env["PYTHONPATH"] = str(REPO)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "drone_ops_sync.pipelines.cli",
            "demo",
            "--dir",
            str(tmp_path / "demo"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for expected in (
        "First sync",
        "Second sync",
        "Current projects by status",
        "models built",
        "What is flying in the next 7 days",
        "stuck in weather_delayed",
        "How reliable were the webhooks",
    ):
        assert expected in out, expected
    database = tmp_path / "demo" / "drone_ops_warehouse.duckdb"
    assert database.exists()
    snapshot = tmp_path / "demo" / "drone_ops_warehouse_bi.duckdb"
    with duckdb.connect(str(snapshot), read_only=True) as bi:
        marts = bi.execute("SELECT count(*) FROM drone_ops_marts.dim_projects").fetchone()
    assert marts is not None and marts[0] > 0, "the demo publishes the BI snapshot"
    # the metrics it prints are the mart's, and it ends with the dashboard page to open
    with duckdb.connect(str(snapshot), read_only=True) as bi:
        metrics = bi.execute("SELECT metric FROM drone_ops_marts.fct_metrics").fetchall()
    assert len(metrics) >= 10 and all(metric in out for (metric,) in metrics), out
    page = tmp_path / "demo" / "drone_ops_warehouse_bi_dashboard.html"
    assert page.is_file() and page.as_uri() in out.replace("\n", ""), out[-2000:]
    # two projects can share a name: the answers list projects and jobs with their ids
    assert "project_id" in out and "job_id" in out, out
    name = Target(database=database).pipeline_name()
    link = Path(env["DLT_DATA_DIR"]) / "pipelines" / name
    assert link.resolve() == database.parent / ".dlt_pipelines" / database.name / name
    assert f"dlt pipeline {name} info" in out, "the demo names the warehouse's pipeline"
    # piped into a log, its tables fit 120 columns (they were 240 wide, its SQL and closing
    # lines 265-320), and it points only at what an installed copy has: commands, not docs/
    tables = [line for line in out.splitlines() if line.startswith(tuple("┏┃┡│└"))]
    assert tables and max(map(len, tables)) <= 120, max(tables, key=len)
    closing = out[out.index("The warehouse: ") :].splitlines()
    assert max(map(len, closing)) <= 120 and "drone-sync dashboard" in out, closing
    assert "docs/" not in out and "README" not in out, out[-2000:]
