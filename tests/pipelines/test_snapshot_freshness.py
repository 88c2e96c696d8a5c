"""The BI snapshot's freshness (docs/bi.md): `_snapshot_info` names the last successful sync
after every successful run, quiet runs included, and `<dataset>._sync_runs` is in every
snapshot unless turned off.

Two `drone-sync run` subprocesses against the simulator over HTTP, the second with nothing
changed (the marts are kept); the snapshot is read with DuckDB like a BI tool would, one
reader holding the first snapshot open through the second run.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.snapshot import publish_snapshot
from drone_ops_sync.pipelines.publish.snapshot_freshness import INFO_TABLE
from drone_ops_sync.pipelines.publish.snapshot_plan import RUNS_CONFIG_KEY, snapshot_plan
from drone_ops_sync.pipelines.run.target import DEFAULT_DATABASE
from testkit.simulator_process import running_simulator

from .cli_helpers import EXIT_OK, Result, cli_env, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DATASET = "drone_ops"
MARTS = f"{DATASET}_marts"
SNAPSHOT_NAME = "drone_ops_warehouse_bi.duckdb"


@dataclass(frozen=True)
class TwoRuns:
    """A run that built the marts, then a quiet run that kept them, in `folder`: the
    first run's `_snapshot_info`, what a reader that held the first snapshot read after the
    quiet run, and the snapshot's inode after each run."""

    folder: Path
    first: Result
    quiet: Result
    before_quiet: dict[str, Any]
    held_during_quiet: dict[str, Any]
    inodes: tuple[int, int]
    database: Path
    snapshot: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoRuns]:
    root = tmp_path_factory.mktemp("freshness")
    folder = root / "wh"
    folder.mkdir()
    with running_simulator(seed=11, scale="tiny") as sim:
        env = cli_env(root, base_url=sim.base_url, api_key=sim.read_key)
        first = run_cli(["run", "--log-format", "json"], env, folder, timeout=300)
        assert first.code == EXIT_OK, first.describe()
        snapshot = folder / SNAPSHOT_NAME
        before = info(snapshot)
        inode = snapshot.stat().st_ino
        reader = duckdb.connect(str(snapshot), read_only=True)
        try:
            quiet = run_cli(["run", "--log-format", "json"], env, folder, timeout=300)
            assert quiet.code == EXIT_OK, quiet.describe()
            held = read_info(reader)
        finally:
            reader.close()
    inodes = (inode, snapshot.stat().st_ino)
    yield TwoRuns(folder, first, quiet, before, held, inodes, folder / DEFAULT_DATABASE, snapshot)


def events(result: Result) -> dict[str, dict[str, Any]]:
    """The run's JSON events by kind (the last of each)."""
    found = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    return {event["event"]: event for event in found}


def read_info(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    cursor = con.execute(f"SELECT * FROM {INFO_TABLE}")
    names = [column[0] for column in cursor.description or []]
    (row,) = cursor.fetchall()
    return dict(zip(names, row, strict=True))


def info(snapshot: Path) -> dict[str, Any]:
    with duckdb.connect(str(snapshot), read_only=True) as con:
        return read_info(con)


def query(database: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return [tuple(row) for row in con.execute(sql).fetchall()]


def run_rows(database: Path) -> list[tuple[Any, ...]]:
    return query(database, f"SELECT * FROM {DATASET}._sync_runs ORDER BY ALL")


def runs_finished(database: Path) -> list[tuple[str, Any]]:
    """(run_id, finished_at) of every run, oldest first."""
    return query(
        database,
        f"SELECT run_id, max(finished_at) FROM {DATASET}._sync_runs GROUP BY 1 ORDER BY 2",
    )


def test_a_quiet_run_moves_data_as_of_and_keeps_the_marts(runs: TwoRuns) -> None:
    """After the quiet run `_snapshot_info` names it as the last successful sync, while the
    marts (and when they were copied) are the first run's."""
    assert events(runs.quiet)["summary"]["models"]["rebuilt"] is False
    (first_id, first_at), (quiet_id, quiet_at) = runs_finished(runs.database)
    assert runs.before_quiet["last_sync_run_id"] == first_id
    assert runs.before_quiet["last_sync_finished_at"] == first_at

    after = info(runs.snapshot)
    assert after["last_sync_run_id"] == after["run_id"] == quiet_id
    assert after["last_sync_finished_at"] == after["run_finished_at"] == quiet_at
    assert after["last_sync_finished_at"] > runs.before_quiet["last_sync_finished_at"]
    assert after["published_at"] > runs.before_quiet["published_at"]
    assert after["marts_published_at"] == runs.before_quiet["marts_published_at"]
    assert after["includes_sync_runs"] is True and after["includes_raw"] is False

    snapshot = events(runs.quiet)["snapshot"]
    assert snapshot["ok"] is True and snapshot["refreshed"] is True
    assert snapshot["run_id"] == quiet_id
    assert events(runs.first)["snapshot"]["refreshed"] is False


def test_the_refresh_replaces_the_file_a_reader_holds(runs: TwoRuns) -> None:
    """The quiet run renamed a new file over the snapshot: a reader that held the old one
    kept reading the first run's freshness, unchanged."""
    assert runs.inodes[0] != runs.inodes[1]
    assert runs.held_during_quiet == runs.before_quiet
    leftovers = [p.name for p in runs.folder.iterdir() if ".tmp-" in p.name or ".wal" in p.name]
    assert leftovers == []


def test_sync_runs_and_marts_in_the_refreshed_snapshot_equal_the_warehouse(
    runs: TwoRuns,
) -> None:
    assert run_rows(runs.snapshot) == run_rows(runs.database)
    assert len(runs_finished(runs.snapshot)) == 2
    tables = query(
        runs.snapshot,
        "SELECT table_schema || '.' || table_name FROM information_schema.tables ORDER BY 1",
    )
    names = [name for (name,) in tables]
    assert f"{DATASET}._sync_runs" in names
    assert [name for name in names if name.startswith(f"{DATASET}.")] == [f"{DATASET}._sync_runs"]
    assert info(runs.snapshot)["tables"] == len(names) - 1  # _snapshot_info not counted
    for name in (n for n in names if n.startswith(f"{MARTS}.")):
        sql = f"SELECT * FROM {name} ORDER BY ALL"
        assert query(runs.snapshot, sql) == query(runs.database, sql), name


def test_sync_runs_can_be_left_out(
    runs: TwoRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bi_snapshot_sync_runs = false` leaves `_sync_runs` out of a full publish and drops it
    from a refreshed one; `_snapshot_info` keeps the freshness either way."""
    monkeypatch.setenv("DESTINATION__DUCKDB__BI_SNAPSHOT_SYNC_RUNS", "false")
    plan = snapshot_plan(runs.database, DATASET)
    assert plan is not None and plan.include_runs is False
    monkeypatch.delenv("DESTINATION__DUCKDB__BI_SNAPSHOT_SYNC_RUNS")
    plan = snapshot_plan(runs.database, DATASET)
    assert plan is not None and plan.include_runs is True, RUNS_CONFIG_KEY

    copy = tmp_path / "bi.duckdb"
    shutil.copy2(runs.snapshot, copy)
    refreshed = publish_snapshot(
        runs.database, DATASET, copy, include_raw=False, include_runs=False, rebuilt=()
    )
    assert refreshed.refreshed and f"{DATASET}._sync_runs" not in refreshed.tables
    whole = publish_snapshot(
        runs.database, DATASET, tmp_path / "w.duckdb", include_raw=False, include_runs=False
    )
    assert not whole.refreshed and whole.tables == refreshed.tables
    for path in (copy, tmp_path / "w.duckdb"):
        row = info(path)
        assert row["includes_sync_runs"] is False
        assert row["last_sync_run_id"] == runs_finished(runs.database)[-1][0]


def test_a_snapshot_with_raw_tables_is_published_whole(runs: TwoRuns, tmp_path: Path) -> None:
    """Only a marts-only snapshot is refreshed in place of a copy; one with every raw table
    (or of another version) is copied whole, so it never holds stale raw tables."""
    path = tmp_path / "raw.duckdb"
    publish_snapshot(runs.database, DATASET, path, include_raw=True)
    again = publish_snapshot(runs.database, DATASET, path, include_raw=False, rebuilt=())
    assert not again.refreshed
    assert info(path)["includes_raw"] is False
    assert [t for t in again.tables if t.startswith(f"{DATASET}.")] == [f"{DATASET}._sync_runs"]


def test_an_older_or_written_snapshot_is_published_whole(runs: TwoRuns, tmp_path: Path) -> None:
    """A snapshot whose `_snapshot_info` an older version wrote, or with a `.wal` beside it (a
    read-write session wrote into it), is not copied: everything is published again."""
    path = tmp_path / "old.duckdb"
    publish_snapshot(runs.database, DATASET, path, include_raw=False)
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE OR REPLACE TABLE {INFO_TABLE} AS SELECT now() AS published_at")
    again = publish_snapshot(runs.database, DATASET, path, include_raw=False, rebuilt=())
    assert not again.refreshed and info(path)["last_sync_run_id"] is not None

    path.with_name(path.name + ".wal").write_bytes(b"")
    written = publish_snapshot(runs.database, DATASET, path, include_raw=False, rebuilt=())
    assert not written.refreshed and not path.with_name(path.name + ".wal").exists()
    assert publish_snapshot(runs.database, DATASET, path, include_raw=False, rebuilt=()).refreshed


def test_a_partial_refresh_replaces_the_rebuilt_marts_and_keeps_the_others(
    runs: TwoRuns, tmp_path: Path
) -> None:
    """A publish after a partial build copies anew only the marts of the models it rebuilt
    (names of other schemas ignored) and keeps the others as the previous file held them;
    repeated, the file reuses the replaced marts' space instead of growing by them."""
    path = tmp_path / "partial.duckdb"
    publish_snapshot(runs.database, DATASET, path, include_raw=False)
    before = info(path)
    with duckdb.connect(str(path)) as con:  # marks in the previous file: what is kept shows them
        for table in ("dim_jobs", "dim_webhooks"):
            con.execute(f"DELETE FROM {MARTS}.{table}")
    rebuilt = ["dim_jobs", "stg_drone_ops__jobs", "no_such_model"]
    result = publish_snapshot(runs.database, DATASET, path, include_raw=False, rebuilt=rebuilt)
    assert result.refreshed and result.replaced == (f"{MARTS}.dim_jobs",)
    jobs = f"SELECT * FROM {MARTS}.dim_jobs ORDER BY ALL"
    assert query(path, jobs) == query(runs.database, jobs) != []
    assert query(path, f"SELECT count(*) FROM {MARTS}.dim_webhooks") == [(0,)], "kept as it was"
    after = info(path)
    assert after["marts_published_at"] > before["marts_published_at"]
    assert after["published_at"] > before["published_at"]

    every_mart = [name.split(".", 1)[1] for name in result.tables if name.startswith(MARTS)]
    sizes = []
    for _ in range(4):
        again = publish_snapshot(
            runs.database, DATASET, path, include_raw=False, rebuilt=every_mart
        )
        assert again.refreshed and len(again.replaced) == len(every_mart)
        sizes.append(path.stat().st_size)
    assert sizes[-1] <= sizes[0] * 1.2, sizes
    for table in every_mart:
        sql = f"SELECT * FROM {MARTS}.{table} ORDER BY ALL"
        assert query(path, sql) == query(runs.database, sql), table
