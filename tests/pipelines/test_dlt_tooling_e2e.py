"""dlt's own tooling on a warehouse drone-sync keeps: the trace shows the data loads, the
pipelines folder holds only pipelines, `pipeline.dataset()` reads the warehouse in the
project's own install, and a warehouse synced under the old pipeline name `drone_ops` syncs
on under its new name. Every run and every dlt command is a subprocess with the test's own
DLT_DATA_DIR, against the simulator on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.target import SYNC_FOLDER, Target
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import (
    EXIT_OK,
    REPO,
    Result,
    cli_env,
    run_cli,
    run_command,
    sync_runs,
)
from .test_destinations_e2e import dlt_cli

pytestmark = pytest.mark.e2e

DATA_TABLES = ("projects", "jobs", "webhook_deliveries")


def synced(tmp_path: Path, sim: SimulatorHandle, database: Path, *flags: str) -> Result:
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    result = run_cli(["run", "--no-models", "--database", str(database), *flags], env, tmp_path)
    assert result.code == EXIT_OK, result.describe()
    return result


def run_python(tmp_path: Path, code: str, cwd: Path) -> Result:
    """A Python snippet in a subprocess with the test's dlt folders, as a user's script."""
    argv = [sys.executable, "-c", textwrap.dedent(code)]
    return run_command(argv, cli_env(tmp_path), cwd, timeout=120)


def test_trace_dataset_and_pipelines_folder(tiny_sim: SimulatorHandle, tmp_path: Path) -> None:
    """After a sync, `dlt pipeline <name> trace` shows the data loads (not only the final
    `_sync_runs` load), dlt's pipelines folder holds nothing but the pipeline, and
    `pipeline.dataset()` reads the warehouse from a script that names only the pipeline,
    creating no DuckDB file where it runs."""
    database = tmp_path / "w" / "warehouse.duckdb"
    synced(tmp_path, tiny_sim, database)
    name = Target(database=database).pipeline_name()

    trace = dlt_cli("trace", tmp_path, name)
    assert trace.code == 0, trace.err
    for table in (*DATA_TABLES, "_sync_runs"):
        assert f"- {table}:" in trace.out, trace.out
    assert trace.out.index("- projects:") < trace.out.rindex("- _sync_runs:"), trace.out

    pipelines = database.parent / ".dlt_pipelines" / database.name
    assert sorted(p.name for p in pipelines.iterdir()) == [name]
    # the run's own tables are in the source's schema, not one named after the pipeline
    schemas = sorted(p.name for p in (pipelines / name / "schemas").glob("*.schema.json"))
    assert schemas == ["drone_ops.schema.json"], schemas
    sync_dir = database.parent / SYNC_FOLDER / database.name
    assert (sync_dir / "spill").is_dir()
    listed = run_command(
        [str(Path(sys.executable).with_name("dlt")), "pipeline", "--list-pipelines"],
        cli_env(tmp_path),
        REPO,
        timeout=60,
    )
    assert listed.code == 0, listed.err
    assert name in listed.out and "spill" not in listed.out and "dbt" not in listed.out

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    read = run_python(
        tmp_path,
        f"""
        import json, dlt
        dataset = dlt.attach(pipeline_name={name!r}).dataset()
        projects = dataset.projects.arrow(chunk_size=10_000)
        current = dataset("select count(*) from projects where _dlt_valid_to is null")
        runs = dataset._sync_runs.select("resource", "status").fetchall()
        print(json.dumps({{"projects": projects.num_rows,
                          "current": current.fetchall()[0][0], "runs": len(runs)}}))
        """,
        elsewhere,
    )
    assert read.code == 0, read.describe()
    counts = json.loads(read.out.strip().splitlines()[-1])
    assert counts["projects"] >= counts["current"] > 0, counts
    assert counts["runs"] == len(sync_runs(database)), counts
    assert list(elsewhere.iterdir()) == [], "no DuckDB file made where the script ran"

    info = dlt_cli("info", tmp_path, name)
    assert info.code == 0 and "dataset_name: drone_ops" in info.out, info.err


def test_pipeline_name_is_the_warehouses(tmp_path: Path) -> None:
    """One name per DuckDB file and dataset, whatever path reaches the file; readable."""
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    name = Target(database=tmp_path / "a" / "w.duckdb").pipeline_name()
    assert re.fullmatch(r"drone_ops_drone_ops_[0-9a-f]{8}", name), name
    assert Target(database=tmp_path / "link" / "w.duckdb").pipeline_name() == name
    assert Target(database=tmp_path / "a" / "v.duckdb").pipeline_name() != name
    other_dataset = Target(database=tmp_path / "a" / "w.duckdb", dataset="ops").pipeline_name()
    assert other_dataset == f"drone_ops_ops_{name[-8:]}", other_dataset


def test_a_moved_warehouse_keeps_its_working_folder(
    tiny_sim: SimulatorHandle, tmp_path: Path
) -> None:
    """A DuckDB file moved with its folders gets a new name (its path changed); the working
    folder of its old path is removed, and the run, started from the warehouse, loads nothing
    again."""
    before, after = tmp_path / "before", tmp_path / "after"
    synced(tmp_path, tiny_sim, before / "warehouse.duckdb")
    before.rename(after)
    database = after / "warehouse.duckdb"
    first_runs = len(sync_runs(database))

    result = synced(tmp_path, tiny_sim, database)
    name = Target(database=database).pipeline_name()
    pipelines = after / ".dlt_pipelines" / database.name
    assert "brought from an earlier path" in result.out, result.describe()
    assert sorted(p.name for p in pipelines.iterdir()) == [name]
    latest = sync_runs(database)[first_runs:]
    assert latest and all(row["status"] == "success" for row in latest), latest
    assert sum(row["rows_new"] + row["rows_changed"] + row["rows_retired"] for row in latest) == 0


def test_dataset_queries_in_the_projects_install(tiny_sim: SimulatorHandle, tmp_path: Path) -> None:
    """What docs/dlt-tooling.md promises of `pipeline.dataset()` in the project's own install:
    `arrow(chunk_size=...)` and `fetchall()` read the warehouse; `df()` needs pandas, which the
    `dashboard` extra installs: without it, the error names the missing module."""
    database = tmp_path / "w" / "warehouse.duckdb"
    synced(tmp_path, tiny_sim, database)
    name = Target(database=database).pipeline_name()
    read = run_python(
        tmp_path,
        f"""
        import importlib.util, json, dlt
        dataset = dlt.attach(pipeline_name={name!r}).dataset()
        table = dataset.projects.arrow(chunk_size=10_000)
        rows = dataset.projects.select("id").fetchall()
        try:
            frame = dataset.projects.df()
            df = len(frame)
        except ImportError as exc:
            df = str(exc)
        print(json.dumps({{"arrow": table.num_rows, "rows": len(rows), "df": df,
                          "pandas": importlib.util.find_spec("pandas") is not None}}))
        """,
        tmp_path,
    )
    assert read.code == 0, read.describe()
    got = json.loads(read.out.strip().splitlines()[-1])
    assert got["arrow"] == got["rows"] > 0, got
    if got["pandas"]:
        assert got["df"] == got["arrow"], got
    else:
        assert "pandas" in got["df"] or "numpy" in got["df"], got
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(spec.startswith("pandas") for spec in extras["dashboard"]), extras["dashboard"]
