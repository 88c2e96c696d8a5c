"""The settings that bound a run's memory: malloc arenas, Arrow's pool and DuckDB's threads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.cli import EXIT_CONFIG, main
from drone_ops_sync.pipelines.run.destination import (
    DEFAULT_DUCKDB_THREADS,
    duckdb_threads,
    make_pipeline,
)
from drone_ops_sync.pipelines.run.target import Target


def test_the_process_asks_glibc_for_two_arenas_unless_the_environment_says() -> None:
    probe = "import pipelines.run.memory as m; print(m.limit_malloc_arenas())"
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == str(sys.platform.startswith("linux"))
    env = {"MALLOC_ARENA_MAX": "4", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert ran.stdout.strip() == "False", "the environment's MALLOC_ARENA_MAX wins"


def _arrow_pool_after(probe: str, env: dict[str, str] | None = None) -> str:
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    return ran.stdout.strip()


def test_arrow_allocates_from_the_system_pool_once_our_package_is_imported() -> None:
    probe = (
        "import drone_ops_sync.pipelines, pyarrow as pa;"
        " pa.table({'a': list(range(1000))});"
        " print(pa.default_memory_pool().backend_name)"
    )
    assert _arrow_pool_after(probe) == "system"
    env = {"ARROW_DEFAULT_MEMORY_POOL": "mimalloc", "PATH": "/usr/bin:/bin"}
    assert _arrow_pool_after(probe, env) == "mimalloc", "the environment's pool wins"


def test_the_arrow_pool_is_not_claimed_once_pyarrow_chose_its_own() -> None:
    probe = (
        "import os; os.environ.pop('ARROW_DEFAULT_MEMORY_POOL', None);"
        " import pyarrow; import pipelines.run.memory as m;"
        " print(m.prefer_system_arrow_pool())"
    )
    assert _arrow_pool_after(probe) == "False"


def test_duckdb_runs_loads_on_one_thread_unless_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert duckdb_threads() == DEFAULT_DUCKDB_THREADS == 1
    monkeypatch.setenv("DESTINATION__DUCKDB__THREADS", "2")
    assert duckdb_threads() == 2
    pipeline = make_pipeline(Target(database=tmp_path / "w.duckdb", pipelines_dir=tmp_path / "p"))
    with pipeline.sql_client() as client:
        assert client.execute_sql("SELECT current_setting('threads')")[0][0] == 2


@pytest.mark.parametrize("value", ["0", "many", "-1"])
def test_a_bad_thread_count_is_a_configuration_error_naming_the_setting(
    value: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SOURCES__DRONE_OPS__BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SOURCES__DRONE_OPS__API_KEY", "k")
    monkeypatch.setenv("DESTINATION__DUCKDB__THREADS", value)
    database = tmp_path / "w.duckdb"
    assert main(["run", "--database", str(database), "--no-models"]) == EXIT_CONFIG
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "destination.duckdb.threads" in err and value in err
    assert not database.exists(), "nothing is created before the settings pass"
