"""`dbt source freshness` reads the sync's own record of its last success (`_sync_runs`), with
the thresholds in models/staging/_drone_ops__sources.yml: run against real DuckDB files."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR


def _warehouse(path: pathlib.Path, runs: list[tuple[str, timedelta]]) -> None:
    """A warehouse whose `_sync_runs` holds one row per (status, age)."""
    now = datetime.now(UTC)
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE SCHEMA drone_ops")
        con.execute(
            "CREATE TABLE drone_ops._sync_runs"
            " (run_id TEXT, resource TEXT, status TEXT, finished_at TIMESTAMPTZ)"
        )
        for number, (status, age) in enumerate(runs):
            con.execute(
                "INSERT INTO drone_ops._sync_runs VALUES (?, 'projects', ?, ?)",
                [f"run-{number}", status, now - age],
            )


def _freshness(tmp_path: pathlib.Path, database: pathlib.Path) -> str:
    """The freshness status dbt gives `_sync_runs` (pass, warn or error)."""
    env = {**os.environ, "DRONE_SYNC_DUCKDB_PATH": str(database), "DRONE_SYNC_DATASET": "drone_ops"}
    output = tmp_path / "sources.json"
    dbt = pathlib.Path(sys.executable).with_name("dbt")
    subprocess.run(
        [
            str(dbt),
            "source",
            "freshness",
            "--project-dir",
            str(PROJECT_DIR),
            "--profiles-dir",
            str(PROJECT_DIR),
            "--target-path",
            str(tmp_path / "target"),
            "--log-path",
            str(tmp_path / "logs"),
            "--output",
            str(output),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results = json.loads(output.read_text(encoding="utf-8"))["results"]
    (result,) = [r for r in results if r["unique_id"].endswith("._sync_runs")]
    return str(result["status"])


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([("success", timedelta(minutes=20))], "pass"),
        ([("success", timedelta(minutes=90))], "warn"),
        # a failed run does not make the warehouse fresh: only successes count
        ([("success", timedelta(hours=3)), ("failed", timedelta(minutes=5))], "error"),
    ],
)
def test_source_freshness_follows_the_last_successful_sync(
    tmp_path: pathlib.Path, runs: list[tuple[str, timedelta]], expected: str
) -> None:
    database = tmp_path / "warehouse.duckdb"
    _warehouse(database, runs)
    assert _freshness(tmp_path, database) == expected
