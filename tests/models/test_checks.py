"""The models' data tests fail when the data is wrong, and say where.

A model's row checks (not-null columns, value lists, keys and grains) are one `model_checks`
test per model (docs/models.md, "How the data is checked"): these builds feed nulls, a value
outside its list and a duplicated key into the raw tables and expect the build to fail on that
model's check, naming each broken check's column and count, and to skip what reads the model.
"""

from __future__ import annotations

import pathlib

import duckdb
import pytest

from drone_ops_sync.pipelines.publish.dbt_build import (
    ModelsResult,
    NodeFailure,
    build_models,
)
from testkit.postgres import create_database, running_postgres
from tests.models.raw_fixture import (
    DDL,
    TABLES,
    create_raw_warehouse,
    postgres_dbt_target,
    write_postgres_tables,
)

JOB_WITHOUT_PATTERN = (
    "update {jobs} set job_pattern = null where id = 'j1' and _dlt_valid_to is null"
)


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> ModelsResult:
    """One build of the fixture with nulls, a value outside its list and a duplicated key fed
    into the raw tables: a current job without a pattern (`dim_jobs.job_pattern` is declared
    not null), two deliveries without an id or a webhook (the staging view's
    `webhook_delivery_id` and `webhook_id`), and a team member with a role no list has, whose
    current row is also there twice (the staging view's `role` and `team_member_id`)."""
    database = create_raw_warehouse(tmp_path_factory.mktemp("checks") / "drone_ops.duckdb")
    with duckdb.connect(str(database)) as connection:
        connection.execute(JOB_WITHOUT_PATTERN.format(jobs="drone_ops.drone_ops.jobs"))
        connection.execute(
            "update drone_ops.drone_ops.webhook_deliveries set id = null, webhook_id = null"
            " where id in (select id from drone_ops.drone_ops.webhook_deliveries limit 2)"
        )
        members = "drone_ops.drone_ops.team_members"
        connection.execute(
            f"update {members} set role = 'captain' where id = (select min(id) from {members})"
        )
        connection.execute(
            f"insert into {members} select * from {members}"
            f" where id = (select min(id) from {members}) and _dlt_valid_to is null"
        )
    return build_models(database, unit_tests=False)


def _failure(result: ModelsResult, test: str) -> NodeFailure:
    [failure] = [f for f in result.failures if f.node.startswith(f"test.drone_ops.{test}.")]
    return failure


def test_a_null_in_a_not_null_column_fails_the_build_naming_it(failed: ModelsResult) -> None:
    assert not failed.ok
    failure = _failure(failed, "checks_dim_jobs")
    assert (failure.resource_type, failure.status) == ("test", "fail")
    assert failure.message.endswith(": null in job_pattern (1 row)"), failure.message
    assert failed.tests_passed > 0


def test_nulls_in_several_columns_are_each_named(failed: ModelsResult) -> None:
    """Two columns of one model null at once: one failed check naming both with their counts;
    the models reading the view are skipped, not built on bad data."""
    failure = _failure(failed, "checks_stg_drone_ops__webhook_deliveries")
    assert failure.message.endswith(
        ": null in webhook_delivery_id (2 rows), webhook_id (2 rows)"
    ), failure.message
    assert "fct_webhook_deliveries" not in failed.built
    assert "dim_webhooks" in failed.built
    assert failed.skipped > 0


def test_a_value_outside_its_list_and_a_duplicated_key_are_each_named(
    failed: ModelsResult,
) -> None:
    """Two kinds of broken check in one model's test: each named with its column and count,
    a kind's checks together; what reads the view is skipped."""
    failure = _failure(failed, "checks_stg_drone_ops__team_members")
    assert failure.message.endswith(
        ": not accepted in role (2 rows); duplicated team_member_id (1 value)"
    ), failure.message
    assert "dim_team_members" not in failed.built


@pytest.mark.slow
def test_the_failure_names_the_column_on_postgresql_too(tmp_path: pathlib.Path) -> None:
    """The same check and the same message on the other adapter the models run on (an
    embedded server, stopped by its handle)."""
    import psycopg2

    with running_postgres() as server:
        create_database(server, "warehouse")
        dsn = server.dsn("warehouse")
        with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
            cursor.execute('create schema "drone_ops"')
            write_postgres_tables(cursor, "drone_ops", TABLES, DDL)
            cursor.execute(JOB_WITHOUT_PATTERN.format(jobs='"drone_ops"."jobs"'))
        connection.close()
        target = postgres_dbt_target(server)
        result = build_models(target, unit_tests=False, target_path=tmp_path / "target")
    failure = _failure(result, "checks_dim_jobs")
    assert failure.message.endswith(": null in job_pattern (1 row)"), failure.message
    assert [f for f in result.failures if f.status == "error"] == []
