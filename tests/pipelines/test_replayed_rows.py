"""A replayed append (a run killed after the database committed a load file but before dlt
recorded it) leaves exact repeats; the next run removes them and nothing else, on both tested
destinations. The chaos suite found users missing from this repair (9 duplicate current rows
after a kill in the middle of the webhooks group's load)."""

from __future__ import annotations

from typing import Any

import pytest

from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.run.warehouse import remove_replayed_rows
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config

from .test_sync_e2e import assert_equals_api, row_counts

pytestmark = pytest.mark.e2e

REPLAYED = ("users", "webhook_deliveries", "projects")


def test_replayed_rows_are_removed_exactly(tiny_sim: Any, any_target: Target) -> None:
    overrides = {"base_url": tiny_sim.base_url, "api_key": tiny_sim.read_key}
    assert run_sync(any_target, config=read_source_config(overrides)).ok
    before = row_counts(any_target)
    pipeline = make_pipeline(any_target)
    with pipeline.sql_client() as client:
        for table in REPLAYED:
            name = client.make_qualified_table_name(table)
            if any_target.destination == "duckdb":
                # a replayed parquet file: the same rows, `_dlt_id` included
                client.execute_sql(f"INSERT INTO {name} SELECT * FROM {name}")
                continue
            # PostgreSQL keeps `_dlt_id` unique, so a repeat there can only carry a new one
            with client.execute_query(f"SELECT * FROM {name} WHERE FALSE") as cursor:
                columns = [c[0] for c in cursor.description]
            listed = ", ".join(f'"{c}"' for c in columns)
            chosen = ", ".join(
                "\"_dlt_id\" || 'r'" if c == "_dlt_id" else f'"{c}"' for c in columns
            )
            client.execute_sql(f"INSERT INTO {name} ({listed}) SELECT {chosen} FROM {name}")
    doubled = row_counts(any_target)
    assert all(doubled[table] == 2 * before[table] for table in REPLAYED), doubled

    removed = remove_replayed_rows(pipeline)

    assert removed == sum(before[table] for table in REPLAYED)
    assert row_counts(any_target) == before
    assert_equals_api(tiny_sim, any_target)
    assert run_sync(any_target, config=read_source_config(overrides)).ok
    assert row_counts(any_target) == before, "the next run finds nothing to repeat or repair"
