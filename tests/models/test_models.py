"""Build the dbt project on a hand-made raw warehouse and check real figures in the marts."""

from __future__ import annotations

import calendar
import json
import pathlib
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import duckdb
import pytest
import yaml  # type: ignore[import-untyped]

from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR, ModelsResult, build_models
from drone_ops_sync.pipelines.publish.questions import EXAMPLE_QUESTIONS, answer_questions
from tests.models.raw_fixture import JOBS, T1, T2, T3, T4, create_raw_warehouse

MARTS = "drone_ops_marts"
# the model paths of the dbt project and the prefixes of their models' names
LAYERS = {"staging": ("stg_drone_ops__",), "intermediate": ("int_",), "marts": ("dim_", "fct_")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, ModelsResult]:
    """One `dbt build` (models, data tests, unit tests) shared by the module's tests."""
    root = tmp_path_factory.mktemp("models")
    database = create_raw_warehouse(root / "drone_ops.duckdb")
    result = build_models(database, target_path=root / "target")
    return database, result


@pytest.fixture()
def con(built: tuple[pathlib.Path, ModelsResult]) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(built[0]), read_only=True)
    yield connection
    connection.close()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in con.execute(sql).fetchall()]


def file_rows(database: pathlib.Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on a warehouse file, opened read-only for that query."""
    with duckdb.connect(str(database), read_only=True) as connection:
        return rows(connection, sql)


def expected_dates(job: dict[str, Any], horizon_days: int = 365) -> list[date | None]:
    """docs/occurrence-rules.md in plain Python, written apart from the SQL to cross-check it."""
    start: date = job["start_date"]
    frequency = job["recurring_frequency"]
    if job["job_pattern"] == "one_time" or frequency is None:
        return [start]
    if frequency == "flexible":
        return [None]
    step = job["recurring_interval"] or 1
    last = job["end_date"] or start + timedelta(days=horizon_days - 1)
    weekday = (start.weekday() + 1) % 7
    days = json.loads(job["selected_days_of_week"] or "[]") or [weekday]
    weeks = json.loads(job["weeks_of_month"] or "[]") or (
        [job["week_of_month"]] if job["week_of_month"] is not None else []
    )
    found: set[date] = set()
    if frequency == "daily":
        found = {start + timedelta(days=k) for k in range(0, (last - start).days + 1, step)}
    elif frequency == "weekly":
        week0 = start - timedelta(days=weekday)
        for k in range(0, (last - week0).days // 7 + 1, step):
            found |= {week0 + timedelta(days=7 * k + w) for w in days}
    else:
        months = 12 * step if frequency == "yearly" else step
        index = 0
        while True:
            year, month0 = divmod(start.year * 12 + start.month - 1 + index, 12)
            month = month0 + 1
            if date(year, month, 1) > last:
                break
            length = calendar.monthrange(year, month)[1]
            if frequency == "monthly" and weeks:
                for q in weeks:
                    for w in days:
                        dates = [
                            date(year, month, d)
                            for d in range(1, length + 1)
                            if (date(year, month, d).weekday() + 1) % 7 == w
                        ]
                        found.add(dates[-1] if q == -1 else dates[q - 1])
            else:
                found.add(date(year, month, min(start.day, length)))
            index += months
    return [d for d in sorted(found) if start <= d <= last]


def test_build_passes_every_model_and_test(built: tuple[pathlib.Path, ModelsResult]) -> None:
    result = built[1]
    assert result.error is None
    assert result.failures == []
    assert result.ok
    assert result.models_built == 36
    assert result.tests_failed == 0
    # a row check per model, the references between them, the occurrence and status unit tests
    assert result.tests_passed >= 55


def test_models_land_in_stg_and_marts_schemas(con: duckdb.DuckDBPyConnection) -> None:
    counts = dict(
        rows(
            con,
            "select table_schema, count(*) from information_schema.tables "
            "where table_schema like 'drone_ops%' group by table_schema",
        )
    )
    assert counts == {"drone_ops": 8, "drone_ops_stg": 18, "drone_ops_marts": 18}


def test_without_the_workspaces_var_every_row_is_workspace_default(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """A single-workspace warehouse (var workspaces unset) builds as before: every staging,
    intermediate and mart model starts with workspace, 'default' on every row."""
    firsts = rows(
        con,
        "select table_schema, table_name, column_name from information_schema.columns"
        " where table_schema in ('drone_ops_stg', 'drone_ops_marts') and ordinal_position = 1",
    )
    assert len(firsts) == 36
    for schema, table, column in firsts:
        assert column == "workspace", table
        values = rows(con, f"select distinct workspace from {schema}.{table}")
        assert values == [("default",)], table


def test_dim_projects_counts_current_jobs_by_status(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con,
        f"select project_id, is_archived, created_by_name, jobs_total, jobs_open, jobs_planned,"
        f" jobs_in_progress, jobs_completed, jobs_on_hold, jobs_other"
        f" from {MARTS}.dim_projects order by project_id",
    )
    assert got == [
        ("p1", False, "Ada Lovelace", 7, 6, 3, 1, 1, 0, 0),
        ("p2", True, "CI key", 2, 1, 1, 0, 1, 0, 0),
        ("p3", False, None, 2, 2, 0, 0, 0, 1, 1),
    ]  # p4 was deleted, j9 was deleted


@pytest.mark.parametrize("job", JOBS, ids=[job["id"] for job in JOBS])
def test_occurrences_match_an_independent_expansion(
    con: duckdb.DuckDBPyConnection, job: dict[str, Any]
) -> None:
    got = rows(
        con,
        f"select occurrence_date from {MARTS}.fct_job_occurrences"
        f" where job_id = '{job['id']}' order by occurrence_number",
    )
    assert [row[0] for row in got] == expected_dates(job)


def test_occurrence_counts_for_rule_kinds(con: duckdb.DuckDBPyConnection) -> None:
    got = dict(
        rows(con, f"select job_id, count(*) from {MARTS}.fct_job_occurrences group by job_id")
    )
    assert got == {
        "j1": 1, "j2": 5, "j3": 7, "j4": 27, "j5": 6, "j6": 12,
        "j7": 5, "j8": 1, "j10": 5, "j11": 1, "j12": 4,
    }  # fmt: skip
    flexible = rows(
        con, f"select occurrence_date from {MARTS}.fct_job_occurrences where job_id = 'j8'"
    )
    assert flexible == [(None,)]


def test_dim_jobs_carries_project_type_and_calendar(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con,
        f"select project_name, job_type_name, job_type_icon, latitude, longitude,"
        f" capture_types_count, planned_occurrences from {MARTS}.dim_jobs where job_id = 'j1'",
    )
    assert got == [("Project p1", "Cell tower", "radio", 52.5, 13.4, 2, 1)]
    renamed = rows(con, f"select job_type_name from {MARTS}.dim_jobs where job_id = 'j11'")
    assert renamed == [("Solar roof",)]  # the job type's current name


def test_occurrences_carry_their_jobs_project_and_status(con: duckdb.DuckDBPyConnection) -> None:
    """Every occurrence says what dim_jobs says of its job, so calendar questions need no join."""
    columns = [("project_id", "project_id"), ("project_name", "project_name")]
    columns += [("job_status", "status"), ("is_job_open", "is_open")]
    differs = " or ".join(f"o.{a} is distinct from j.{b}" for a, b in columns)
    sql = f"from {MARTS}.fct_job_occurrences o join {MARTS}.dim_jobs j using (workspace, job_id)"
    assert rows(con, f"select count(*) {sql} where {differs}") == [(0,)]
    closed = rows(con, f"select distinct job_status {sql} where not o.is_job_open")
    assert closed and {status for (status,) in closed} <= {"completed", "cancelled", "aborted"}


def test_fct_project_status_history_merges_and_closes_intervals(
    con: duckdb.DuckDBPyConnection,
) -> None:
    got = rows(
        con,
        f"select project_id, interval_number, status, valid_from, valid_to, versions,"
        f" is_closed_by_retirement from {MARTS}.fct_project_status_history"
        f" where project_id in ('p1', 'p4') order by project_id, interval_number",
    )
    assert got == [
        ("p1", 1, "planned", T1, T2, 1, False),
        ("p1", 2, "weather_delayed", T2, T4, 2, False),
        ("p1", 3, "in_progress", T4, None, 1, False),
        ("p4", 1, "draft", T1, T3, 1, True),
    ]
    durations = rows(
        con,
        f"select duration_seconds from {MARTS}.fct_project_status_history"
        f" where project_id = 'p1' and valid_to is not null order by interval_number",
    )
    assert durations == [(2.5 * 86400,), ((T4 - T2).total_seconds(),)]


def test_fct_job_status_history_of_a_retired_job(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con,
        f"select status, valid_from, valid_to, is_current, is_closed_by_retirement,"
        f" duration_seconds from {MARTS}.fct_job_status_history where job_id = 'j9'"
        f" order by interval_number",
    )
    assert got == [
        ("planned", T1, T2, False, False, (T2 - T1).total_seconds()),
        ("cancelled", T2, T3, False, True, (T3 - T2).total_seconds()),
    ]


def test_fct_webhook_delivery_health_daily(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con,
        f"select webhook_id, delivery_date, deliveries, failures, success_rate,"
        f" p50_duration_ms, p95_duration_ms from {MARTS}.fct_webhook_delivery_health_daily"
        f" order by webhook_id, delivery_date",
    )
    assert got == [
        ("w1", date(2024, 5, 1), 4, 1, 0.75, 250.0, 385.0),
        ("w1", date(2024, 5, 2), 2, 0, 1.0, 100.0, 145.0),
        ("w2", date(2024, 5, 2), 1, 1, 0.0, 1000.0, 1000.0),
    ]


def test_fct_webhook_deliveries_parsed_payload(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con,
        f"select webhook_delivery_id, is_payload_parsed, delivery_id, event_to_delivery_seconds"
        f" from {MARTS}.fct_webhook_deliveries where webhook_delivery_id in ('d1', 'd7')"
        f" order by 1",
    )
    assert got == [("d1", True, "dl-d1", 0.25), ("d7", False, None, None)]


def test_team_members_flag_current_pilots(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(
        con, f"select team_member_id, role, is_pilot from {MARTS}.dim_team_members order by 1"
    )
    assert got == [("tm1", "pilot", True), ("tm2", "ops_lead", False), ("tm3", "pilot", True)]


def test_answer_questions_reads_the_marts(built: tuple[pathlib.Path, ModelsResult]) -> None:
    answers = answer_questions(built[0], "drone_ops")
    assert [title for title, _, _ in answers] == [q.title for q in EXAMPLE_QUESTIONS]
    _, columns, delayed = answers[1]
    assert columns[:3] == ["workspace", "project_id", "project_name"]
    assert [(row[0], row[2]) for row in delayed] == [("default", "Project p3")]
    _, _, reliability = answers[2]
    assert all(len(row) == 7 for row in reliability)
    _, columns, _ = answers[3]
    assert columns == [
        "workspace",
        "project_id",
        "project_name",
        "occurrences",
        "jobs",
        "next_date",
    ]


# each metric of fct_metrics as its documentation (docs/metrics.md) states it, written here
# independently of the model's SQL; "today" is the build's measured_date
METRIC_CHECKS = {
    "projects_open": "select count(*) from {m}.dim_projects where not is_archived"
    " and status not in ('completed', 'cancelled', 'aborted')",
    "projects_overdue": "select count(*) from {m}.dim_projects where not is_archived"
    " and status not in ('completed', 'cancelled', 'aborted') and end_date < {today}",
    "jobs_open": "select count(*) from {m}.dim_jobs where not is_project_archived and is_open",
    "jobs_on_hold": "select count(*) from {m}.dim_jobs where not is_project_archived"
    " and status = 'on_hold'",
    "jobs_mapped": "select count(*) from {m}.dim_jobs where not is_project_archived"
    " and latitude is not null",
    "webhook_deliveries_30_days": "select coalesce(sum(deliveries), 0)"
    " from {m}.fct_webhook_delivery_health_daily where delivery_date > {today} - 30",
}


def test_metrics_mart_counts_what_its_documentation_says(
    con: duckdb.DuckDBPyConnection,
) -> None:
    today = f"(select max(measured_date) from {MARTS}.fct_metrics)"
    got = dict(rows(con, f"select metric, value from {MARTS}.fct_metrics"))
    assert {r[0] for r in rows(con, f"select distinct workspace from {MARTS}.fct_metrics")} == {
        "default"
    }
    for metric, sql in METRIC_CHECKS.items():
        (expected,) = rows(con, sql.format(m=MARTS, today=today))[0]
        assert got[metric] == expected, metric
    assert got["jobs_mapped"] > 0 and got["projects_open"] > 0


def test_column_names_follow_the_convention(con: duckdb.DuckDBPyConnection) -> None:
    """Booleans are is_/has_, timestamps <event>_at, dates <event>_date, in staging,
    intermediate and marts; valid_from/valid_to are the documented exception (docs/models.md)."""
    columns = rows(
        con,
        "select table_name, column_name, data_type from information_schema.columns"
        " where table_schema in ('drone_ops_stg', 'drone_ops_marts')",
    )
    wrong = [
        (table, column)
        for table, column, data_type in columns
        if (data_type == "BOOLEAN" and not column.startswith(("is_", "has_")))
        or (
            data_type.startswith("TIMESTAMP")
            and not column.endswith("_at")
            and column not in ("valid_from", "valid_to")
        )
        or (data_type == "DATE" and not column.endswith("_date"))
    ]
    assert wrong == []


@pytest.mark.slow
def test_other_dataset_and_horizon_var(tmp_path: pathlib.Path) -> None:
    database = create_raw_warehouse(tmp_path / "other.duckdb", dataset="ops_x")
    result = build_models(
        database,
        "ops_x",
        run_tests=False,
        target_path=tmp_path / "target",
        dbt_vars={"occurrence_horizon_days": 30},
    )
    assert result.ok, result.failures
    got = file_rows(
        database,
        "select occurrence_date from ops_x_marts.fct_job_occurrences"
        " where job_id = 'j4' order by occurrence_number",
    )
    # every 2 weeks from Thu 6 June, window 6 June .. 5 July
    assert [row[0] for row in got] == [date(2024, 6, 6), date(2024, 6, 20), date(2024, 7, 4)]
    assert expected_dates(next(j for j in JOBS if j["id"] == "j4"), 30) == [row[0] for row in got]


def test_data_dictionary_lists_every_mart_column() -> None:
    """docs/data-dictionary.md is written from the marts' yml; catch drift when a column changes."""
    root = pathlib.Path(__file__).resolve().parents[2]
    folder = root / "models" / "marts"
    marts = [
        model
        for path in sorted(folder.rglob("*.yml"))
        for model in yaml.safe_load(path.read_text())["models"]
    ]
    assert len(marts) == len(list(folder.rglob("*.sql"))), "one yml per mart"
    dictionary = (root / "docs" / "data-dictionary.md").read_text()
    sections = dictionary.split("\n### ")[1:]
    listed = {section.split("\n", 1)[0]: section for section in sections}
    for model in marts:
        assert model["name"] in listed, model["name"]
        for column in model["columns"]:
            assert f"| `{column['name']}` |" in listed[model["name"]], (model["name"], column)


def test_one_yml_per_model_and_the_naming_convention() -> None:
    """The model paths are the three layers; every model's SQL has a yml of the same name beside
    it, declaring that model alone (plus its unit tests), and no config() of its own; staging
    models are stg_drone_ops__<entity>, intermediate int_*, marts dim_* or fct_*
    (docs/models.md)."""
    project = yaml.safe_load(PROJECT_DIR.joinpath("dbt_project.yml").read_text())
    assert project["model-paths"] == list(LAYERS)
    for folder, allowed in LAYERS.items():
        models = sorted((PROJECT_DIR / folder).rglob("*.sql"))
        assert models, folder
        for sql in models:
            assert sql.stem.startswith(allowed), sql.name
            assert "config(" not in sql.read_text(), f"{sql.name}: configure the folder instead"
            properties = yaml.safe_load(sql.with_suffix(".yml").read_text())
            assert [model["name"] for model in properties["models"]] == [sql.stem]
            unit_tests = properties.get("unit_tests", [])
            assert {test["model"] for test in unit_tests} <= {sql.stem}, sql.name
            # a unit test builds a relation of its name: PostgreSQL allows 63 characters
            assert all(len(test["name"]) <= 63 for test in unit_tests), sql.name
        for yml in (PROJECT_DIR / folder).rglob("*.yml"):
            assert yml.with_suffix(".sql").is_file() or yml.name.endswith("__sources.yml"), yml


def test_materialization_and_schema_per_layer(built: tuple[pathlib.Path, ModelsResult]) -> None:
    """dbt_project.yml configures each layer once; dbt's fqn leaves the model path out, so
    check what the build used: views in <dataset>_stg for staging and intermediate, tables in
    <dataset>_marts for every marts area."""
    manifest = json.loads((built[0].parent / "target" / "manifest.json").read_text())
    expected = {
        "staging": ("view", "drone_ops_stg"),
        "intermediate": ("view", "drone_ops_stg"),
        "marts": ("table", MARTS),
    }
    models = [node for node in manifest["nodes"].values() if node["resource_type"] == "model"]
    assert len(models) == sum(len(list((PROJECT_DIR / f).rglob("*.sql"))) for f in LAYERS)
    for node in models:
        layer = node["original_file_path"].split("/")[0]
        assert (node["config"]["materialized"], node["schema"]) == expected[layer], node["name"]


def test_build_without_a_database_file_says_so(tmp_path: pathlib.Path) -> None:
    result = build_models(tmp_path / "missing.duckdb")
    assert not result.ok
    assert result.error is not None and "run a sync first" in result.error
    assert not (tmp_path / "missing.duckdb").exists()


def test_event_gap_report_counts_missed_and_unlogged_events(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Figures derived by hand in raw_fixture.py (WEBHOOK_EVENTS)."""
    got = rows(
        con,
        f"select webhook_id, event_date, events_logged, events_logged_delivered,"
        f" events_received, events_missed, events_unlogged"
        f" from {MARTS}.fct_webhook_event_gaps order by webhook_id nulls last, event_date",
    )
    assert got == [
        ("w1", date(2024, 5, 1), 4, 3, 3, 1, 0),
        ("w1", date(2024, 5, 2), 2, 2, 0, 2, 0),
        (None, date(2024, 5, 2), 0, 0, 0, 0, 1),
    ]
