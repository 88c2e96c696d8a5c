"""`dbt source freshness` reads the sync's own record of its last success (`_sync_runs`), with
the thresholds in models/staging/_drone_ops__sources.yml: run against real DuckDB files."""

from __future__ import annotations

import json
import pathlib
from datetime import UTC, datetime, timedelta

import duckdb
import pytest
from dbt.cli.main import dbtRunner

from drone_ops_sync.pipelines.publish.dbt_build import (
    DbtTarget,
    dbt_args,
    dbt_environment,
    profile_env,
)
from drone_ops_sync.pipelines.run.door import release_dbt_duckdb


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


def freshness(target: pathlib.Path, database: pathlib.Path) -> str:
    """The freshness status `dbt source freshness` gives `_sync_runs` (pass, warn or error), run
    in this process (dbt's programmatic entry, the command line's own) with `target` as dbt's
    target folder, which it keeps for partial parsing."""
    output = target / "sources.json"
    output.unlink(missing_ok=True)  # a case before this one wrote it
    args = ["source", *dbt_args("freshness", target), "--output", str(output)]
    environment = profile_env(DbtTarget.duckdb(database), "drone_ops")
    with dbt_environment(environment):
        try:
            dbtRunner().invoke(args)
        finally:
            release_dbt_duckdb()
    results = json.loads(output.read_text(encoding="utf-8"))["results"]
    (result,) = [r for r in results if r["unique_id"].endswith("._sync_runs")]
    return str(result["status"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """One folder for every case: the same warehouse path and dbt target folder, so dbt parses
    the project fully once and partially after (a new path is a new profile to dbt)."""
    return tmp_path_factory.mktemp("freshness")


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
    folder: pathlib.Path, runs: list[tuple[str, timedelta]], expected: str
) -> None:
    database = folder / "warehouse.duckdb"
    database.unlink(missing_ok=True)
    _warehouse(database, runs)
    assert freshness(folder / "target", database) == expected
