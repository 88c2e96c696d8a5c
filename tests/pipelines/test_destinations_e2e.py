"""`drone-sync` on PostgreSQL as a user runs it (a real server on 127.0.0.1, credentials through
dlt's environment variable), and dlt's own tooling finding the pipeline from the repository
root. The warehouse contract itself is asserted on both destinations by
test_sync_e2e.py::test_lifecycle_first_sync_changes_and_quiet_rerun."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.postgres import RunningPostgres, create_database, running_postgres
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    REPO,
    TRACEBACK,
    Result,
    cli_env,
    closed_loopback_port,
    dlt_data_dir,
    run_cli,
    run_command,
)
from .test_sync_e2e import assert_equals_api, row_counts
from .test_unattended import summary_of
from .warehouse_check import query

pytestmark = pytest.mark.e2e

CREDENTIALS_ENV = "DESTINATION__POSTGRES__CREDENTIALS"
DLT_COMMANDS = ("info", "trace", "schema", "load-package")


def postgres_run(
    tmp_path: Path, sim: SimulatorHandle, dsn: str, *flags: str, timeout: float = 240
) -> Result:
    env = cli_env(
        tmp_path, base_url=sim.base_url, api_key=sim.read_key, extra={CREDENTIALS_ENV: dsn}
    )
    args = ["run", "--destination", "postgres", "--log-format", "json", *flags]
    return run_cli(args, env, tmp_path, timeout=timeout)


def dlt_cli(command: str, tmp_path: Path, pipeline: str, *args: str) -> Result:
    """`dlt pipeline PIPELINE COMMAND` from the repository root, as a user types it (dlt's
    data folder is the test's, as it is for the runs)."""
    dlt = str(Path(sys.executable).with_name("dlt"))
    return run_command(
        [dlt, "pipeline", pipeline, command, *args], cli_env(tmp_path), REPO, timeout=120
    )


def text_rows_containing(dsn: str, needle: str) -> list[str]:
    """Every table of every schema in the database whose rows, as text, contain `needle`."""
    tables = query(
        dsn,
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    found = []
    for table in tables:
        name = f'"{table["table_schema"]}"."{table["table_name"]}"'
        hits = query(dsn, f"SELECT count(*) AS n FROM {name} AS t WHERE t::text LIKE '%{needle}%'")
        if hits[0]["n"]:
            found.append(name)
    return found


def files_containing(folder: Path, needle: bytes) -> list[Path]:
    return [
        path
        for path in folder.rglob("*")
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes()
    ]


def test_postgres_full_churned_and_quiet_runs_with_models(
    sim: SimulatorHandle,
    postgres_server: RunningPostgres,
    postgres_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CLI on PostgreSQL: equal to the API after a first run (with the dbt build and its
    tests), after churn and after a quiet run that writes nothing; the password appears in
    no output, no file of dlt's and no table."""
    monkeypatch.setenv(CREDENTIALS_ENV, postgres_dsn)
    target = Target(destination="postgres")

    first = postgres_run(tmp_path, sim, postgres_dsn)
    assert first.code == EXIT_OK, first.describe()
    summary = summary_of(first)
    assert summary["outcome"] == "success", summary
    models = summary["models"]
    assert models["ok"] and models["tests_failed"] == 0, models
    assert models["models_built"] > 10 and models["tests_passed"] > 30, models
    assert_equals_api(sim, target)
    marts = query(postgres_dsn, "SELECT count(*) AS n FROM drone_ops_marts.dim_projects")
    current = query(
        postgres_dsn, "SELECT count(*) AS n FROM drone_ops.projects WHERE _dlt_valid_to IS NULL"
    )
    assert marts == current, "one dim_projects row per current project"

    changed = sim.churn(seed=3, update_fraction=0.1, delete_fraction=0.02)
    sim.wait_for_deliveries()
    second = postgres_run(tmp_path, sim, postgres_dsn, "--no-models")
    assert second.code == EXIT_OK, second.describe()
    tables = summary_of(second)["tables"]
    assert sum(t["changed"] + t["retired"] for t in tables.values()) > 0, (changed, tables)
    assert_equals_api(sim, target)

    before = row_counts(target)
    quiet = postgres_run(tmp_path, sim, postgres_dsn, "--no-models")
    assert quiet.code == EXIT_OK, quiet.describe()
    assert summary_of(quiet)["rows_written"] == 0, quiet.describe()
    assert row_counts(target) == before
    assert_equals_api(sim, target)

    password = postgres_server.password
    for result in (first, second, quiet):
        assert password not in result.text, result.describe()
    assert files_containing(tmp_path, password.encode()) == []
    assert text_rows_containing(postgres_dsn, password) == []

    # every dlt command is run in the DuckDB tooling test; here, that `info` finds the
    # postgres pipeline and shows no password
    name = summary_of(first)["pipeline_name"]
    assert name == target.pipeline_name() and name.startswith("drone_ops_drone_ops_"), name
    info = dlt_cli("info", tmp_path, name)
    assert info.code == 0, info.err
    assert "postgres" in info.out and "dataset_name: drone_ops" in info.out, info.out
    assert password not in info.out + info.err


def test_postgres_credential_problems_are_one_line(
    tiny_sim: SimulatorHandle, postgres_server: RunningPostgres, tmp_path: Path
) -> None:
    """A password the server wants but is not given, and a wrong one, name the setting
    (exit 2); a server that is down is named with its address (exit 1); no traceback, no
    password, nothing created."""
    create_database(postgres_server, "refusals")
    good = postgres_server.dsn("refusals")
    cases = [
        (good.replace(f":{postgres_server.password}@", "@"), EXIT_CONFIG, "no password supplied"),
        (good.replace(postgres_server.password, "not-the-password"), EXIT_CONFIG, "refused"),
        (
            good.replace(f":{postgres_server.port}/", f":{closed_loopback_port()}/"),
            EXIT_FAILED,
            "cannot reach PostgreSQL",
        ),
    ]
    for dsn, code, words in cases:
        result = postgres_run(tmp_path, tiny_sim, dsn, timeout=60)
        assert result.code == code, result.describe()
        assert TRACEBACK not in result.text, result.describe()
        assert words in result.text, result.describe()
        assert "destination.postgres.credentials" in result.text or code == EXIT_FAILED
        assert "not-the-password" not in result.text, result.describe()
    assert query(good, "SELECT count(*) AS n FROM pg_namespace WHERE nspname LIKE 'drone%'") == [
        {"n": 0}
    ]


def test_postgres_login_without_a_password(tiny_sim: SimulatorHandle, tmp_path: Path) -> None:
    """dlt insists on a password in the connection string, libpq does not: a server that lets
    the user in without one (trust, .pgpass, certificates) is synced with a string that has
    none."""
    with running_postgres(("passwordless",), host_auth="trust") as server:
        dsn = f"postgresql://{server.user}@{server.host}:{server.port}/passwordless"
        result = postgres_run(tmp_path, tiny_sim, dsn, "--no-models", timeout=120)
        assert result.code == EXIT_OK, result.describe()
        rows = query(dsn.replace("@", ":@", 1), "SELECT count(*) AS n FROM drone_ops.projects")
        assert rows[0]["n"] > 0


def test_dlt_tooling_finds_each_duckdb_warehouse_by_its_pipeline_name(
    tiny_sim: SimulatorHandle, tmp_path: Path
) -> None:
    """`dlt pipeline <name> ...` from the repository root shows the warehouse the name belongs
    to, wherever it lives, whatever was synced after it; a pipeline folder of someone else's
    is left alone."""
    env = cli_env(tmp_path, base_url=tiny_sim.base_url, api_key=tiny_sim.read_key)
    first, second = tmp_path / "a" / "first.duckdb", tmp_path / "b" / "second.duckdb"
    names = {}
    for database in (first, second):
        result = run_cli(["run", "--no-models", "--database", str(database)], env, tmp_path)
        assert result.code == EXIT_OK, result.describe()
        names[database] = Target(database=database).pipeline_name()
        assert f"dlt pipeline {names[database]}" in result.out, result.describe()
        link = dlt_data_dir(tmp_path) / "pipelines" / names[database]
        working = database.parent / ".dlt_pipelines" / database.name / names[database]
        assert link.resolve() == working
    assert names[first] != names[second]
    for database in (first, second):
        for command in DLT_COMMANDS:
            shown = dlt_cli(command, tmp_path, names[database])
            assert shown.code == 0, f"dlt pipeline {names[database]} {command}:\n{shown.err}"
            if command == "info":
                assert "destination_type: dlt.destinations.duckdb" in shown.out, shown.out
            if command == "load-package":
                # dlt names the package's real folder: the working folder beside the file
                assert str(database.parent / ".dlt_pipelines") in shown.out, shown.out

    link = dlt_data_dir(tmp_path) / "pipelines" / names[first]
    link.unlink()
    link.mkdir()
    (link / "someone_elses").write_text("kept")
    again = run_cli(["run", "--no-models", "--database", str(first)], env, tmp_path)
    assert again.code == EXIT_OK, again.describe()
    assert "--pipelines-dir" in again.text, again.describe()
    assert (link / "someone_elses").read_text() == "kept"
