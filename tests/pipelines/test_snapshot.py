"""The BI snapshot (docs/bi.md): a read-only copy of the warehouse that BI tools hold open
while the sync runs.

The promise tested here: a reader in another process that holds the snapshot never blocks a
sync and never fails, keeps seeing the data it opened until it reconnects, and sees the new run
after reconnecting. Also: the snapshot equals the warehouse's marts (and raw tables on request),
a failed publish or a failed run leaves the previous snapshot as it was and no temporary file,
and `--no-snapshot` publishes nothing.

The real simulator over HTTP on 127.0.0.1, real DuckDB files, `drone-sync` as a subprocess.
Building the dbt marts is the slow part (about 15 s), so it happens once, in `template`, and
each test that changes a warehouse works on a copy of its DuckDB files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from argparse import Namespace
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import IO, Any

import duckdb
import pytest

from drone_ops_sync.pipelines.cli import EXIT_CONFIG, build_parser, main
from drone_ops_sync.pipelines.publish.snapshot import SnapshotError, publish_snapshot
from drone_ops_sync.pipelines.publish.snapshot_freshness import INFO_TABLE
from drone_ops_sync.pipelines.publish.snapshot_plan import (
    CONFIG_KEY,
    default_snapshot_path,
    snapshot_plan,
)
from drone_ops_sync.pipelines.publishing import command_snapshot_plan
from drone_ops_sync.pipelines.run.target import DEFAULT_DATABASE, Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import ConfigError, read_source_config
from testkit.simulator_process import SimulatorHandle, running_simulator, stop_process

from .cli_helpers import (
    EXIT_FAILED,
    EXIT_OK,
    TRACEBACK,
    Result,
    cli_env,
    run_cli,
    wait_until,
)

pytestmark = pytest.mark.e2e

SEED = 11
DATASET = "drone_ops"
MARTS = f"{DATASET}_marts"
SNAPSHOT_NAME = "drone_ops_warehouse_bi.duckdb"
CONFIG_ENV = "DESTINATION__DUCKDB__BI_SNAPSHOT"
READER = Path(__file__).resolve().parent / "snapshot_reader.py"


@dataclass(frozen=True)
class Template:
    """A warehouse with its marts built and a snapshot published by `drone-sync models`."""

    folder: Path
    models: Result

    @property
    def database(self) -> Path:
        return self.folder / DEFAULT_DATABASE

    @property
    def snapshot(self) -> Path:
        return self.folder / SNAPSHOT_NAME


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    """A tiny workspace that no test here changes."""
    with running_simulator(seed=SEED, scale="tiny", admin=True) as handle:
        yield handle


@pytest.fixture(scope="module")
def template(sim: SimulatorHandle, tmp_path_factory: pytest.TempPathFactory) -> Template:
    """One sync, then `drone-sync models --snapshot-raw --log-format json` from the
    warehouse's folder, so the snapshot lands at its default path."""
    root = tmp_path_factory.mktemp("template")
    folder = root / "wh"
    folder.mkdir()
    overrides = {"base_url": sim.base_url, "api_key": sim.read_key}
    assert run_sync(
        Target(database=folder / DEFAULT_DATABASE), config=read_source_config(overrides)
    ).ok
    env = cli_env(root, base_url=sim.base_url, api_key=sim.read_key)
    args = ["models", "--no-test", "--snapshot-raw", "--log-format", "json"]
    models = run_cli(args, env, folder)
    assert models.code == EXIT_OK, models.describe()
    return Template(folder, models)


@pytest.fixture
def warehouse(template: Template, tmp_path: Path) -> Path:
    """A copy of the template's warehouse and snapshot (dlt restores its state from the
    warehouse on the first run); returns the folder, which the CLI runs in."""
    folder = tmp_path / "wh"
    folder.mkdir()
    for path in (template.database, template.snapshot):
        shutil.copy2(path, folder / path.name)
    return folder


# --- helpers ------------------------------------------------------------------------------


InProcess = Callable[..., tuple[int, str]]


@pytest.fixture
def in_process(
    sim: SimulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> InProcess:
    """`drone-sync ARGS` in this process (no interpreter to start: these tests only need the
    exit code and the output), configured through the environment like a user would, with
    dlt's data folder (where a run links its pipeline for dlt's tooling) inside tmp_path."""

    def run(args: list[str], api_key: str | None = None, **settings: str) -> tuple[int, str]:
        monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path / "dlt-data"))
        monkeypatch.delenv(CONFIG_ENV, raising=False)
        monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", sim.base_url)
        monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", api_key or sim.read_key)
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = main(args)
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    return run


def query(database: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(database), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def tables(database: Path, schemas: tuple[str, ...]) -> dict[str, str]:
    """`schema.table` -> table type, of the given schemas."""
    listed = ", ".join(f"'{schema}'" for schema in schemas)
    rows = query(
        database,
        "SELECT table_schema, table_name, table_type FROM information_schema.tables"
        f" WHERE table_schema IN ({listed}) ORDER BY ALL",
    )
    return {f"{schema}.{name}": kind for schema, name, kind in rows}


def fingerprints(database: Path, names: list[str]) -> dict[str, tuple[Any, ...]]:
    """Per table: columns with their types, the row count and an order-free checksum of every
    value."""
    found: dict[str, tuple[Any, ...]] = {}
    con = duckdb.connect(str(database), read_only=True)
    try:
        for table in names:
            schema, name = table.split(".")
            columns = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            row = con.execute(
                f'SELECT count(*), sum(hash(t)::HUGEINT) FROM "{schema}"."{name}" AS t'
            ).fetchone()
            assert row is not None
            found[table] = (tuple(columns), row[0], row[1])
    finally:
        con.close()
    return found


def newest_run(database: Path) -> str:
    rows = query(
        database,
        f"SELECT run_id FROM {DATASET}._sync_runs ORDER BY finished_at DESC, run_id DESC LIMIT 1",
    )
    return str(rows[0][0])


def info(snapshot: Path) -> dict[str, Any]:
    con = duckdb.connect(str(snapshot), read_only=True)
    try:
        cursor = con.execute(f"SELECT * FROM {INFO_TABLE}")
        names = [column[0] for column in cursor.description or []]
        rows = cursor.fetchall()
    finally:
        con.close()
    assert len(rows) == 1, rows
    return dict(zip(names, rows[0], strict=True))


def file_state(path: Path) -> tuple[int, int, int, bytes]:
    """Inode, size, mtime and content: a publish replaces the file, so any of them changes."""
    stat = path.stat()
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, path.read_bytes())


def temporary_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or p.suffix == ".wal")


def expected_tables(database: Path, *, include_raw: bool) -> list[str]:
    """The marts, `_sync_runs` (in every snapshot by default), and with `include_raw` every
    raw table but dlt's bookkeeping."""
    found = tables(database, (MARTS, DATASET))
    runs = f"{DATASET}._sync_runs"
    raw = [name for name in found if name.startswith(f"{DATASET}.")]
    return [
        name
        for name in found
        if name.startswith(f"{MARTS}.")
        or name == runs
        or (include_raw and name in raw and not name.startswith(f"{DATASET}._dlt_"))
    ]


# --- the CLI and the published file -------------------------------------------------------


def test_models_command_publishes_the_snapshot_and_a_json_event(template: Template) -> None:
    """`drone-sync models` publishes at the default path beside the warehouse and says so in
    a `snapshot` event before the final summary."""
    events = [json.loads(line) for line in template.models.out.splitlines() if line.strip()]
    kinds = [event["event"] for event in events]
    assert kinds[-3:] == ["models", "snapshot", "summary"], kinds
    event = events[-2]
    assert event["ok"] is True and event["error"] is None
    assert event["path"] == str(template.snapshot)
    assert event["bytes"] == template.snapshot.stat().st_size
    assert event["include_raw"] is True
    assert event["seconds"] < 30
    assert event["run_id"] == newest_run(template.database)
    assert event["tables"] == expected_tables(template.database, include_raw=True)
    assert any(name.startswith(f"{MARTS}.") for name in event["tables"])
    assert events[-1]["outcome"] == "success" and events[-1]["exit_code"] == EXIT_OK
    assert template.snapshot == default_snapshot_path(template.database)
    assert temporary_files(template.folder) == []


@pytest.mark.parametrize("include_raw", [False, True], ids=["marts", "marts-and-raw"])
def test_snapshot_equals_the_warehouse(
    template: Template, tmp_path: Path, include_raw: bool
) -> None:
    """Every mart (and with include_raw every raw table but dlt's bookkeeping) as a real
    table in a schema of the same name, column types, rows and values equal, plus
    `_snapshot_info`; leftovers of a killed publish are removed, other files are not."""
    snapshot = tmp_path / "new" / "folder" / "bi.duckdb"
    snapshot.parent.mkdir(parents=True)
    (snapshot.parent / "bi.duckdb.tmp-4242").write_bytes(b"left by a killed publish")
    (snapshot.parent / "bi.duckdb.tmp-4242.wal").write_bytes(b"and its WAL")
    (snapshot.parent / "other.duckdb.tmp-4242").write_bytes(b"not ours")
    before = datetime.now(UTC)
    result = publish_snapshot(template.database, DATASET, snapshot, include_raw=include_raw)
    after = datetime.now(UTC)

    expected = expected_tables(template.database, include_raw=include_raw)
    assert list(result.tables) == expected
    assert len(expected) >= 10, expected
    published = tables(snapshot, (MARTS, DATASET, "main"))
    assert published == dict.fromkeys([*expected, f"main.{INFO_TABLE}"], "BASE TABLE")
    copied, original = fingerprints(snapshot, expected), fingerprints(template.database, expected)
    for table in expected:
        assert copied[table] == original[table], table
    empty = [table for table, (_, rows, _) in original.items() if not rows]
    # empty by nature in a warehouse that received no webhook event and no bad value
    may_be_empty = {
        f"{DATASET}._sync_issues",
        f"{DATASET}._webhook_events",
        f"{MARTS}.fct_webhook_event_gaps",
    }
    assert set(empty) <= may_be_empty, f"the comparison compared nothing: {empty}"

    row = info(snapshot)
    assert before <= row["published_at"] <= after
    assert row["source_database"] == DEFAULT_DATABASE
    assert row["dataset"] == DATASET
    assert row["run_id"] == newest_run(template.database) == result.run_id
    assert row["run_finished_at"] is not None
    assert row["includes_raw"] is include_raw
    assert row["tables"] == len(expected)
    assert result.bytes == snapshot.stat().st_size and result.path == snapshot
    left = sorted(p.name for p in snapshot.parent.iterdir())
    assert left == ["bi.duckdb", "other.duckdb.tmp-4242"]


def test_the_same_sql_runs_on_the_snapshot(template: Template) -> None:
    """A report's query, schema-qualified as against the warehouse, gives the same answer."""
    sql = (
        f"SELECT p.status, count(*) AS projects, sum(j.jobs) AS jobs FROM {MARTS}.dim_projects p"
        f" LEFT JOIN (SELECT project_id, count(*) AS jobs FROM {MARTS}.dim_jobs GROUP BY 1) j"
        " USING (project_id) GROUP BY ALL ORDER BY ALL"
    )
    assert query(template.snapshot, sql) == query(template.database, sql)
    assert query(template.snapshot, sql), "the query returned rows"


def test_failure_at_the_rename_leaves_no_temporary_file(template: Template, tmp_path: Path) -> None:
    """Everything is copied, then the rename fails (the snapshot path is a folder): the error
    says so, the folder is untouched and the temporary file is gone."""
    snapshot = tmp_path / "bi.duckdb"
    snapshot.mkdir()
    (snapshot / "keep").write_text("x")
    with pytest.raises(SnapshotError, match="could not publish the BI snapshot") as raised:
        publish_snapshot(template.database, DATASET, snapshot, include_raw=False)
    assert "previous snapshot is still in place" in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bi.duckdb"]
    assert (snapshot / "keep").read_text() == "x"


def test_publish_never_replaces_the_warehouse(template: Template) -> None:
    """The last line of defence behind the CLI's check: a snapshot path naming the warehouse
    (here through a `..` detour) is refused before anything is written."""
    before = file_state(template.database)
    detour = template.folder / ".." / template.folder.name / DEFAULT_DATABASE
    with pytest.raises(SnapshotError, match="would replace the warehouse itself"):
        publish_snapshot(template.database, DATASET, detour, include_raw=False)
    assert file_state(template.database) == before
    assert temporary_files(template.folder) == []


def test_failed_publish_exits_1_in_one_line_and_keeps_the_previous_snapshot(
    in_process: InProcess, warehouse: Path
) -> None:
    """A mart that cannot be read (a broken view) fails the copy half-way: the run's data is
    loaded and recorded, the command exits 1 with one line and no traceback, the previous
    snapshot is byte for byte as it was and no temporary file remains."""
    database = warehouse / DEFAULT_DATABASE
    con = duckdb.connect(str(database))
    try:
        con.execute(f"CREATE VIEW {MARTS}.zz_broken AS SELECT CAST('not a number' AS INTEGER) x")
    finally:
        con.close()
    before = file_state(warehouse / SNAPSHOT_NAME)
    code, output = in_process(["run", "--no-models", "--database", str(database)])
    assert code == EXIT_FAILED, output
    assert TRACEBACK not in output, output
    failures = [line for line in output.splitlines() if "BI snapshot failed" in line]
    assert len(failures) == 1, output
    assert f"copying {MARTS}.zz_broken: ConversionException" in failures[0], failures[0]
    assert "previous snapshot is still in place" in failures[0]
    assert "all tables loaded" in output
    assert file_state(warehouse / SNAPSHOT_NAME) == before
    assert temporary_files(warehouse) == []
    statuses = query(
        database,
        f"SELECT DISTINCT status FROM {DATASET}._sync_runs WHERE run_id = '{newest_run(database)}'",
    )
    assert statuses == [("success",)]


def test_failed_run_publishes_nothing(in_process: InProcess, warehouse: Path) -> None:
    """A run whose tables fail (the key is refused) must not publish what it half-updated."""
    before = file_state(warehouse / SNAPSHOT_NAME)
    args = ["run", "--no-models", "--snapshot-raw", "--database", str(warehouse / DEFAULT_DATABASE)]
    code, output = in_process(args, api_key="not-the-key")
    assert code == EXIT_FAILED, output
    assert "401" in output and "BI snapshot" not in output, output
    assert file_state(warehouse / SNAPSHOT_NAME) == before
    assert temporary_files(warehouse) == []


def test_no_snapshot_publishes_nothing(
    in_process: InProcess, warehouse: Path, tmp_path: Path
) -> None:
    """`--no-snapshot` wins over the setting: the run succeeds, and no file is written or
    replaced, neither the default snapshot nor the configured one."""
    before = file_state(warehouse / SNAPSHOT_NAME)
    configured = tmp_path / "configured_bi.duckdb"
    args = ["run", "--no-models", "--no-snapshot", "--database", str(warehouse / DEFAULT_DATABASE)]
    code, output = in_process(args, **{CONFIG_ENV: str(configured)})
    assert code == EXIT_OK, output
    assert "all tables loaded" in output and "BI snapshot" not in output, output
    assert file_state(warehouse / SNAPSHOT_NAME) == before
    assert not configured.exists()
    assert temporary_files(warehouse) == []


# --- the key promise: a reader in another process across two syncs ------------------------


class Reader:
    """snapshot_reader.py as a process: commands on its stdin, JSON lines into a file."""

    def __init__(self, snapshot: Path, log: Path) -> None:
        self.log = log
        self._out: IO[bytes] = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(READER), str(snapshot), "--max-seconds", "150"],
            stdin=subprocess.PIPE,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        # the last line may still be being written
        return [json.loads(line) for line in lines if line.endswith("}")]

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\n".encode())
        self.process.stdin.flush()

    def rounds(self, generation: int, since: float = 0.0) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["generation"] == generation and r["ts"] > since]

    def wait_rounds(self, generation: int, since: float = 0.0, count: int = 3) -> None:
        assert wait_until(lambda: len(self.rounds(generation, since)) >= count, timeout=300), (
            f"the reader made fewer than {count} rounds of generation {generation}:"
            f" {self.records()[-5:]}"
        )

    def stop(self) -> None:
        """Ends the process by its own handle; a reader that ignores `stop` is killed."""
        if self.process.poll() is None:
            try:
                self.send("stop")
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                stop_process(self.process)
        if self.process.stdin is not None:
            self.process.stdin.close()
        self._out.close()


def test_a_reader_holding_the_snapshot_never_blocks_two_syncs(
    template: Template, warehouse: Path, tmp_path: Path
) -> None:
    """The reader queries the snapshot every 50 ms through two `drone-sync run`s with data
    changed in between. Both runs exit 0 and publish; no query of the reader fails; it sees
    the data it opened (run id, rows) until it reconnects, and the new run after."""
    snapshot = warehouse / SNAPSHOT_NAME
    database = warehouse / DEFAULT_DATABASE
    first_run = info(snapshot)["run_id"]
    with running_simulator(seed=SEED, scale="tiny", admin=True) as own_sim:
        env = cli_env(tmp_path, base_url=own_sim.base_url, api_key=own_sim.read_key)
        reader = Reader(snapshot, tmp_path / "reader.jsonl")
        try:
            reader.wait_rounds(0)
            seen = reader.rounds(0)[0]
            assert seen["run_id"] == first_run, seen
            # generation: how often the reader has connected again, as a BI tool's refresh does
            for generation in (0, 1):
                changes = {"update_fraction": 0.5, "delete_fraction": 0.0}
                own_sim.churn(seed=generation + 1, new_deliveries_per_webhook=3, **changes)
                started = time.time()
                result = run_cli(["run", "--no-models", "--snapshot-raw"], env, warehouse)
                finished = time.time()
                assert result.code == EXIT_OK, result.describe()
                assert f"BI snapshot: {snapshot}" in result.out, result.describe()
                during = [r for r in reader.rounds(generation, started) if r["ts"] < finished]
                assert during, "the reader went on querying while the sync ran"
                reader.wait_rounds(generation, since=finished)
                for record in reader.rounds(generation):
                    # the old file: same publish, same rows, until the reader reconnects
                    assert "error" not in record, record
                    for key in ("run_id", "published_at", "project_versions", "deliveries"):
                        assert record[key] == seen[key], (key, record, seen)

                reader.send("reopen")
                reader.wait_rounds(generation + 1)
                fresh = reader.rounds(generation + 1)[0]
                assert "error" not in fresh, fresh
                assert fresh["run_id"] == newest_run(database) != seen["run_id"], fresh
                assert fresh["project_versions"] > seen["project_versions"], (fresh, seen)
                assert fresh["deliveries"] > seen["deliveries"], (fresh, seen)
                assert fresh["mart_rows"] == seen["mart_rows"], "--no-models: marts as built"
                seen = fresh
        finally:
            reader.stop()
    records = reader.records()
    assert [r for r in records if "error" in r] == []
    assert len(records) >= 20, f"only {len(records)} rounds"
    gaps = [later["ts"] - earlier["ts"] for earlier, later in pairwise(records)]
    assert max(gaps) < 5, f"the reader stalled for {max(gaps):.1f}s"
    assert temporary_files(warehouse) == []


# --- where the snapshot goes --------------------------------------------------------------


@pytest.fixture
def no_config(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    return monkeypatch


def test_default_path_is_beside_the_warehouse(tmp_path: Path, no_config: Any) -> None:
    database = tmp_path / "data" / "drone_ops_warehouse.duckdb"
    plan = snapshot_plan(database, DATASET)
    assert plan is not None
    assert plan.path == tmp_path / "data" / "drone_ops_warehouse_bi.duckdb"
    assert plan.include_raw is False
    assert default_snapshot_path(tmp_path / "w.db") == tmp_path / "w_bi.db"


def test_setting_flag_and_off_switch(tmp_path: Path, no_config: pytest.MonkeyPatch) -> None:
    """`--no-snapshot` beats `--snapshot`, which beats the setting, which beats the default;
    false (any case, TOML bool or text) turns it off."""
    database = tmp_path / "w.duckdb"
    no_config.setenv(CONFIG_ENV, str(tmp_path / "from_config.duckdb"))
    plan = snapshot_plan(database, DATASET)
    assert plan is not None and plan.path == tmp_path / "from_config.duckdb"
    plan = snapshot_plan(database, DATASET, path_flag=tmp_path / "flag.duckdb", include_raw=True)
    assert plan is not None and plan.path == tmp_path / "flag.duckdb" and plan.include_raw
    assert snapshot_plan(database, DATASET, off_flag=True) is None
    for off in ("false", "FALSE", " off "):
        no_config.setenv(CONFIG_ENV, off)
        assert snapshot_plan(database, DATASET) is None
    no_config.setenv(CONFIG_ENV, "true")
    plan = snapshot_plan(database, DATASET)
    assert plan is not None and plan.path == tmp_path / "w_bi.duckdb"


REFUSED = {
    "empty": ("", {}, f"{CONFIG_KEY}: '' is not a file path"),
    "raw-but-off": ("false", {"include_raw": True}, f"turned off ({CONFIG_KEY})"),
    "raw-but-no-snapshot": (None, {"off_flag": True, "include_raw": True}, "(--no-snapshot)"),
    "the-warehouse": (None, {"path_flag": "w.duckdb"}, "is the warehouse itself"),
    "schema-name": (None, {"path_flag": f"{MARTS}.duckdb"}, "would name the DuckDB catalog"),
    "folder": (None, {"path_flag": "folder"}, "is a folder"),
    "under-a-file": (None, {"path_flag": "a_file/bi.duckdb"}, "is a file, not a folder"),
}


@pytest.mark.parametrize(("setting", "flags", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_unusable_settings_are_refused(
    tmp_path: Path,
    no_config: pytest.MonkeyPatch,
    setting: str | None,
    flags: dict[str, Any],
    message: str,
) -> None:
    """Refused before anything is written, naming the flag or setting (exit 2 in the CLI)."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "a_file").write_text("x")
    if setting is not None:
        no_config.setenv(CONFIG_ENV, setting)
    if "path_flag" in flags:
        flags = {**flags, "path_flag": tmp_path / flags["path_flag"]}
    with pytest.raises(ConfigError) as raised:
        snapshot_plan(tmp_path / "w.duckdb", DATASET, **flags)
    assert message in str(raised.value)


def test_cli_refuses_snapshot_flags_that_cannot_apply(tmp_path: Path) -> None:
    """`--snapshot` with `--no-snapshot` is a usage error (exit 2); a server destination gets
    no snapshot, and asking for one there is refused rather than ignored."""
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["run", "--snapshot", "x.duckdb", "--no-snapshot"])
    assert raised.value.code == EXIT_CONFIG
    server = Target(destination="postgres")
    asked = Namespace(snapshot=tmp_path / "x.duckdb", no_snapshot=False, snapshot_raw=False)
    with pytest.raises(ConfigError, match="--snapshot: a BI snapshot is made of a DuckDB"):
        command_snapshot_plan(server, asked)
    quiet = Namespace(snapshot=None, no_snapshot=False, snapshot_raw=False)
    assert command_snapshot_plan(server, quiet) is None


def test_publish_into_a_missing_folder_creates_it(template: Template, tmp_path: Path) -> None:
    """The configured folder need not exist yet (a fresh BI share)."""
    snapshot = tmp_path / "share" / "bi" / "drone.duckdb"
    publish_snapshot(template.database, DATASET, snapshot, include_raw=False)
    assert info(snapshot)["dataset"] == DATASET
    assert os.listdir(snapshot.parent) == ["drone.duckdb"]
