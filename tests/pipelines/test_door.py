"""The one read-only opener (`pipelines/run/door.py` `read_only`), which every reader of a
DuckDB file goes through (`drone-sync status`, `metrics`, `dashboard`, the demo, the BI
snapshot's copy): what each way an open fails is said as, on real files, the holder a real
process."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.metrics import read_metrics_file
from drone_ops_sync.pipelines.run.door import SNAPSHOT_SETTING, WarehouseMissing, read_only
from drone_ops_sync.pipelines.run.lock import WarehouseBusy
from drone_ops_sync.sources.drone_ops import ConfigError

from .cli_helpers import held_for_writing


def test_a_missing_file_is_said_and_never_created(tmp_path: Path) -> None:
    database = tmp_path / "nowhere.duckdb"
    with pytest.raises(WarehouseMissing, match="no DuckDB file at"), read_only(database):
        pass
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_no_database_names_the_setting(tmp_path: Path) -> None:
    database = tmp_path / "notes.duckdb"
    database.write_text("not a database\n" * 1000)
    with (
        pytest.raises(ConfigError, match="cannot be opened as a DuckDB database") as raised,
        read_only(database, SNAPSHOT_SETTING),
    ):
        pass
    assert raised.value.setting == SNAPSHOT_SETTING
    assert database.read_text() == "not a database\n" * 1000


def test_a_writer_in_another_process_is_named_and_readers_share(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    duckdb.connect(str(database)).close()
    with read_only(database) as first, read_only(database) as second:
        assert first.execute("select 1").fetchone() == second.execute("select 1").fetchone()
    with held_for_writing(database) as holder:
        with pytest.raises(WarehouseBusy, match=f"PID {holder.pid}"), read_only(database):
            pass
        # the metrics reader says the same, not a DuckDB traceback
        with pytest.raises(WarehouseBusy, match="open for writing in another process"):
            read_metrics_file(database, "drone_ops")
    with read_only(database) as con:
        assert con.execute("select 42").fetchone() == (42,)
