"""The models over a fleet of workspaces: two workspaces' raw tables in schemas of their own, with
the same ids (p1, j1, w1, ... in both) but other names and statuses, built as one set of models
with the `workspaces` var (docs/models.md, "Many workspaces").

Each workspace is also built alone (the var unset, its schema as the dataset) in the same
warehouse, so "the fleet's rows of a workspace equal that workspace built alone" is checked mart
by mart, column by column; a join or count that forgot the workspace would mix the two. Runs on
DuckDB and on PostgreSQL (an embedded server, testkit/postgres.py), the two adapters the models
are built on.
"""

from __future__ import annotations

import copy
import pathlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.dbt_build import (
    PROJECT_DIR,
    DbtTarget,
    ModelsResult,
    build_models,
)
from drone_ops_sync.pipelines.publish.metrics import FLEET_SQL
from testkit.postgres import create_database, running_postgres
from tests.models.raw_fixture import (
    DDL,
    TABLES,
    postgres_dbt_target,
    write_postgres_tables,
    write_raw_tables,
)

NORTH, SOUTH = "north", "south"
# the north schema is named like the DuckDB file, so its tables need source_in_view
# (macros/source_in_view.sql) inside the union as the single-workspace fixture needs it
SCHEMAS = {NORTH: "ws_north", SOUTH: "ws_south"}
# listed in the var but never synced: no schema, no tables
UNSYNCED = {"name": "east", "schema": "ws_east"}
FLEET_DATASET = "fleet"
WORKSPACES_VAR = {
    "workspaces": [{"name": name, "schema": schema} for name, schema in SCHEMAS.items()]
    + [UNSYNCED]
}
MARTS = sorted(path.stem for path in (PROJECT_DIR / "marts").rglob("*.sql"))

# south's statuses: the same ids as north's, in other states, so its figures differ from north's
SOUTH_STATUS = {
    "planned": "completed",
    "in_progress": "planned",
    "weather_delayed": "in_progress",
    "on_hold": "cancelled",
    "completed": "planned",
    "not_started": "aborted",
    "cancelled": "planned",
    "draft": "draft",
    "other": "other",
}


def south_tables() -> dict[str, list[dict[str, Any]]]:
    """The fixture's raw tables as a second workspace: same ids, other names and statuses, and
    the opposite outcome for every webhook delivery."""
    tables = {table: copy.deepcopy(list(rows)) for table, rows in TABLES.items()}
    for table in ("projects", "jobs"):
        for row in tables[table]:
            row["status"] = SOUTH_STATUS[row["status"]]
            row["name"] = f"South {row['name']}"
    for table, column in (("job_types", "name"), ("webhooks", "name"), ("team_members", "title")):
        for row in tables[table]:
            row[column] = f"South {row[column]}"
    for row in tables["users"]:
        row["display_name"] = f"South {row['display_name']}"
        # a column only this workspace's table has (a later sync version's), see south_ddl
        row["nickname"] = f"nick-{row['id']}"
    for row in tables["webhook_deliveries"]:
        row["status"] = "failed" if row["status"] == "success" else "success"
    return tables


def south_ddl() -> dict[str, str]:
    """The fixture's DDL, but south's `users` has its columns in the reverse order and one more:
    tables written by separate loads need not agree on either, and the union must match
    columns by name (macros/workspace_union_select_lists.sql)."""
    columns = [column.strip() for column in DDL["users"].split(",") if column.strip()]
    return {**DDL, "users": ", ".join([*reversed(columns), "nickname varchar"])}


# open jobs per project (current jobs not completed, cancelled or aborted), worked out from the
# fixture's jobs: north as in test_models.py, south through SOUTH_STATUS
OPEN_JOBS = {
    (NORTH, "p1"): (7, 6),
    (NORTH, "p2"): (2, 1),
    (NORTH, "p3"): (2, 2),
    (SOUTH, "p1"): (7, 3),  # j2, j4 (in_progress), j11 (planned)
    (SOUTH, "p2"): (2, 1),  # j7
    (SOUTH, "p3"): (2, 1),  # j12 (other)
}


@dataclass
class Fleet:
    """The warehouse after the fleet build and one build per workspace alone."""

    adapter: str
    fleet: ModelsResult
    alone: dict[str, ModelsResult]
    target_path: pathlib.Path
    query: Callable[[str], list[tuple[Any, ...]]]


def _build_all(
    warehouse: pathlib.Path | DbtTarget, root: pathlib.Path
) -> tuple[ModelsResult, dict[str, ModelsResult]]:
    fleet = build_models(
        warehouse, FLEET_DATASET, target_path=root / "target-fleet", dbt_vars=WORKSPACES_VAR
    )
    # one target folder for both; each parses the whole project, since dbt keys its partial
    # parse on the profile, which holds the dataset
    alone = {
        name: build_models(
            warehouse, schema, run_tests=False, target_path=root / "target-alone", write_json=False
        )
        for name, schema in SCHEMAS.items()
    }
    return fleet, alone


def _duckdb_fleet(root: pathlib.Path) -> Iterator[Fleet]:
    database = root / f"{SCHEMAS[NORTH]}.duckdb"
    catalog = database.stem
    with duckdb.connect(str(database)) as con:
        for name, schema in SCHEMAS.items():
            con.execute(f'create schema "{catalog}"."{schema}"')
            tables, ddl = (south_tables(), south_ddl()) if name == SOUTH else (TABLES, DDL)
            write_raw_tables(con, f'"{catalog}"."{schema}"', tables, ddl)
    fleet, alone = _build_all(database, root)

    def query(sql: str) -> list[tuple[Any, ...]]:
        with duckdb.connect(str(database), read_only=True) as con:
            return [tuple(row) for row in con.execute(sql).fetchall()]

    yield Fleet("duckdb", fleet, alone, root / "target-fleet", query)


def _postgres_fleet(root: pathlib.Path) -> Iterator[Fleet]:
    import psycopg2

    with running_postgres() as server:
        create_database(server, "warehouse")
        dsn = server.dsn("warehouse")
        with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
            for name, schema in SCHEMAS.items():
                cursor.execute(f'create schema "{schema}"')
                tables, ddl = (south_tables(), south_ddl()) if name == SOUTH else (TABLES, DDL)
                write_postgres_tables(cursor, schema, tables, ddl)
        connection.close()
        target = postgres_dbt_target(server)
        fleet, alone = _build_all(target, root)

        def query(sql: str) -> list[tuple[Any, ...]]:
            with psycopg2.connect(dsn) as con, con.cursor() as cursor:
                cursor.execute(sql)
                found = [tuple(row) for row in cursor.fetchall()]
            con.close()
            return found

        yield Fleet("postgres", fleet, alone, root / "target-fleet", query)


@pytest.fixture(
    scope="module",
    params=["duckdb", pytest.param("postgres", marks=pytest.mark.slow)],
)
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp(f"fleet-{request.param}")
    if request.param == "duckdb":
        yield from _duckdb_fleet(root)
    else:
        yield from _postgres_fleet(root)


def test_the_fleet_build_passes_every_model_and_test(fleet: Fleet) -> None:
    """The data tests hold per workspace (the keys of model_checks,
    relationships_within_workspace) although every id exists in both workspaces."""
    result = fleet.fleet
    assert result.error is None
    assert result.failures == []
    assert result.ok
    assert result.models_built == 36
    assert (result.tests_failed, result.tests_warned) == (0, 0)
    assert result.tests_passed >= 55
    for name, alone in fleet.alone.items():
        assert alone.ok and alone.models_built == 36, (name, alone.failures, alone.error)


def test_every_mart_has_both_workspaces_and_no_other(fleet: Fleet) -> None:
    """Both synced workspaces have rows in every mart; the listed workspace without raw tables
    was skipped (no rows, no error)."""
    for mart in MARTS:
        found = fleet.query(f"select distinct workspace from {FLEET_DATASET}_marts.{mart}")
        assert sorted(found) == [(NORTH,), (SOUTH,)], mart


def _columns(fleet: Fleet, schema: str, mart: str) -> list[str]:
    found = fleet.query(
        "select column_name from information_schema.columns"
        f" where table_schema = '{schema}' and table_name = '{mart}' order by ordinal_position"
    )
    return [column for (column,) in found]


def _mart_rows(fleet: Fleet, schema: str, mart: str, where: str) -> list[tuple[Any, ...]]:
    """A mart's rows without the workspace column, sorted; an open interval's duration is
    measured to the build time, which differs between builds, so it is left out."""
    columns = [column for column in _columns(fleet, schema, mart) if column != "workspace"]
    selected = [
        "case when valid_to is null then null else duration_seconds end"
        if column == "duration_seconds"
        else column
        for column in columns
    ]
    found = fleet.query(f"select {', '.join(selected)} from {schema}.{mart} where {where}")
    return sorted(found, key=repr)


@pytest.mark.parametrize("mart", MARTS)
def test_each_workspace_equals_the_workspace_built_alone(fleet: Fleet, mart: str) -> None:
    """Every row and column of the fleet's mart, for one workspace, is what a single-workspace
    build of that workspace's raw tables gives (there with workspace 'default')."""
    fleet_columns = _columns(fleet, f"{FLEET_DATASET}_marts", mart)
    assert fleet_columns[0] == "workspace"
    for name, schema in SCHEMAS.items():
        alone_schema = f"{schema}_marts"
        assert _columns(fleet, alone_schema, mart) == fleet_columns
        alone = _mart_rows(fleet, alone_schema, mart, "workspace = 'default'")
        assert alone, (mart, name)
        assert len(alone) == fleet.query(f"select count(*) from {alone_schema}.{mart}")[0][0]
        in_fleet = _mart_rows(fleet, f"{FLEET_DATASET}_marts", mart, f"workspace = '{name}'")
        assert in_fleet == alone, (mart, name)


def test_the_two_workspaces_differ(fleet: Fleet) -> None:
    """The comparison above is only worth something if the workspaces' marts differ."""
    north, south = (
        _mart_rows(fleet, f"{FLEET_DATASET}_marts", "dim_projects", f"workspace = '{name}'")
        for name in (NORTH, SOUTH)
    )
    assert north != south


def test_open_jobs_per_project_per_workspace(fleet: Fleet) -> None:
    """Jobs are counted in their own workspace's project, in dim_projects and in the calendar:
    joined on the project id alone, p1 would count both workspaces' 14 jobs."""
    marts = f"{FLEET_DATASET}_marts"
    projects = fleet.query(
        f"select workspace, project_id, jobs_total, jobs_open from {marts}.dim_projects"
    )
    assert {(w, p): (total, open_) for w, p, total, open_ in projects} == OPEN_JOBS
    calendar = fleet.query(
        f"select workspace, project_id, count(distinct job_id) from {marts}.fct_job_occurrences"
        " where is_job_open group by workspace, project_id"
    )
    assert {(w, p): n for w, p, n in calendar} == {key: n for key, (_, n) in OPEN_JOBS.items()}
    names = fleet.query(
        f"select distinct workspace, project_name like 'South %' from {marts}.fct_job_occurrences"
    )
    assert sorted(names) == [(NORTH, False), (SOUTH, True)]


def test_the_union_matches_columns_by_name_only_where_they_differ(fleet: Fleet) -> None:
    """south's users table has other columns in another order: that union lists columns by
    name, north's part filling the missing one with a typed null; tables whose columns agree
    are read with `*` (macros/workspace_union_select_lists.sql)."""
    compiled = fleet.target_path / "compiled" / "drone_ops" / "staging"
    users = (compiled / "stg_drone_ops__users.sql").read_text()
    assert "'north' as workspace" in users and "'south' as workspace" in users
    assert re.search(r"cast\(null as .+\) as \"nickname\"\n", users), users
    assert "'east'" not in users
    projects = (compiled / "stg_drone_ops__project_versions.sql").read_text()
    assert projects.count("union all") == 1, projects
    assert projects.count("workspace,\n        *\n    from") == 2, projects
    display = fleet.query(
        f"select workspace, user_id, display_name, profile_picture"
        f" from {FLEET_DATASET}_marts.dim_users order by 1, 2"
    )
    assert display == [
        (NORTH, "k1", "CI key", None),
        (NORTH, "u1", "Ada Lovelace", None),
        (SOUTH, "k1", "South CI key", None),
        (SOUTH, "u1", "South Ada Lovelace", None),
    ]


@pytest.mark.parametrize(
    ("workspaces", "message"),
    [
        ([{"name": "North", "schema": "ws_north"}], "[a-z][a-z0-9_]*"),
        ([{"name": "north'", "schema": "ws_north"}], "[a-z][a-z0-9_]*"),
        ([{"name": "north"}], "a schema"),
        ([{"name": "north", "schema": "a"}, {"name": "north", "schema": "b"}], "listed twice"),
        ([], "non-empty list"),
    ],
)
def test_a_malformed_workspaces_var_stops_the_build(
    tmp_path: pathlib.Path, workspaces: list[dict[str, str]], message: str
) -> None:
    """A name is written into the SQL and is half of every key: a malformed var is refused
    before anything is built, with what is wrong."""
    database = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(database)).close()
    result = build_models(
        database,
        run_tests=False,
        select="stg_drone_ops__users",
        dbt_vars={"workspaces": workspaces},
    )
    assert not result.ok
    assert result.models_built == 0
    assert message in (result.error or "") + "".join(f.message for f in result.failures)


@pytest.mark.parametrize(
    "dbt_vars", [None, {"workspaces": [UNSYNCED, {"name": "west", "schema": "ws_west"}]}]
)
def test_a_table_no_workspace_has_fails_as_without_workspaces(
    tmp_path: pathlib.Path, dbt_vars: dict[str, Any] | None
) -> None:
    """When no workspace has the raw table, the first workspace's is read anyway (the source
    itself with the var unset): the model fails on the missing table, not on an empty union."""
    database = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(database)).close()
    result = build_models(
        database, run_tests=False, select="stg_drone_ops__users", dbt_vars=dbt_vars
    )
    assert not result.ok
    assert [failure.node for failure in result.failures] == ["model.drone_ops.stg_drone_ops__users"]
    schema = "drone_ops" if dbt_vars is None else UNSYNCED["schema"]
    assert f'Table with name "{schema}.users" does not exist' in result.failures[0].message


def test_fleet_metrics_combine_the_workspaces(fleet: Fleet) -> None:
    """The fleet's metric (docs/metrics.md, the dashboard's "all workspaces"): counts are the
    sum of the workspaces' counts, a rate the sum of numerators over the sum of denominators."""
    marts = f"{FLEET_DATASET}_marts"
    fleet_rows = fleet.query(FLEET_SQL.format(marts=marts))
    per_workspace = fleet.query(
        f"select metric, unit, numerator, denominator from {marts}.fct_metrics"
    )
    assert {row[0] for row in fleet_rows} == {row[0] for row in per_workspace}
    for metric, _, _, _, numerator, denominator, value, _ in fleet_rows:
        parts = [row for row in per_workspace if row[0] == metric]
        assert len(parts) == 2, metric
        assert numerator == sum(row[2] for row in parts), metric
        if parts[0][1] == "count":
            assert value == numerator, metric
        elif denominator:
            assert value == pytest.approx(numerator / sum(row[3] for row in parts)), metric
