"""What `drone-sync run --help` imports: argparse and our CLI module, nothing heavy; and what
opening a warehouse imports: not SQLAlchemy.

A scheduler's or a user's `--help` (and a usage error) should not pay for dlt, DuckDB,
pyarrow, httpx, rich, dbt or the simulator's server: measured, that was 120 MB and over a
second before anything was printed (docs/performance.md). Checked in a fresh interpreter,
because this test session has imported all of them already. An import test, not a timing one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKER = "--- modules ---"
SCRIPT = f"""
import json, sys
from drone_ops_sync.pipelines import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print({MARKER!r})
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
"""
HEAVY = ("dlt", "duckdb", "pyarrow", "httpx", "rich", "dbt", "uvicorn", "starlette", "simulator")


def _modules_after(*argv: str) -> tuple[object, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    tail = done.stdout.split(MARKER, 1)[1]
    result = json.loads(tail)
    return result["code"], result["modules"]


def _heavy(modules: list[str]) -> list[str]:
    tops = {m.removeprefix("drone_ops_sync.").split(".")[0] for m in modules}
    return sorted(tops & set(HEAVY))


@pytest.mark.parametrize(
    "argv",
    [("run", "--help"), ("--help",), ("status", "--help"), ("run", "--no-such-flag")],
    ids=["run-help", "help", "status-help", "usage-error"],
)
def test_help_and_usage_errors_import_nothing_heavy(argv: tuple[str, ...]) -> None:
    code, modules = _modules_after(*argv)
    assert code in (0, 2)
    assert _heavy(modules) == []
    assert not [m for m in modules if m.startswith("drone_ops_sync.sources.")]


def test_sim_help_still_reaches_the_simulator() -> None:
    """`sim` is listed without importing the simulator, and asking for it loads it."""
    code, modules = _modules_after("sim", "serve", "--help")
    assert code == 0
    assert "drone_ops_sync.simulator.cli" in modules


OPEN_WAREHOUSE = """
import sys
from pathlib import Path
from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.target import Target
pipeline = make_pipeline(Target(database=Path(sys.argv[1])))
with pipeline.sql_client() as client:
    assert client.execute_sql("SELECT 1") == [(1,)]
    assert Path(client.credentials.database) == Path(sys.argv[1]).resolve()
print(sorted(sys.modules))
"""


def test_opening_a_duckdb_warehouse_does_not_import_sqlalchemy(tmp_path: Path) -> None:
    """dlt reads a DuckDB path given as the credentials' native value as a connection URL
    first, which imports SQLAlchemy (0.15 s of a quiet run) before falling back to a file;
    `make_pipeline` sets the path as a field, and the pipeline still opens that file."""
    database = tmp_path / "warehouse.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", OPEN_WAREHOUSE, str(database)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules = done.stdout
    assert "'duckdb'" in modules
    assert "'sqlalchemy'" not in modules
    assert database.exists()
