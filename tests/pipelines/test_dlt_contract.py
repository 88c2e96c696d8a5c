"""What our SQL writes into dlt's tables is what a dlt load writes: the contract with dlt.

Two writers write a few rows into tables dlt made, without a dlt load (`pipelines/run/
sql_load.py`): the event receiver's batch, retiring and inserting scd2 versions as dlt's merge
would (`listen/write.py`), and a run's record (`run/run_record.py`). Each test loads the same
rows both ways into two warehouses of one kind, on DuckDB and PostgreSQL, through a real dlt
load and through ours, and requires identical tables: every column with its type, every value,
and the `_dlt_loads` rows. What dlt makes anew for each load is compared by shape and
relationship, not value: `_dlt_id` (its length and alphabet, unique), `_dlt_load_id` (dlt's
form, a completed load recorded in `_dlt_loads`, the newest), the scd2 validity columns (one
boundary per load: the retired version's end is the new version's start), the load's
`inserted_at` and schema hash (the batch's load has the schema of the load before it). A dlt
release that writes any of these otherwise fails here, before our rows stop reading as its own.
The event batch has no dlt load in the product (a batch SQL cannot write waits for the next
run), so its reference is built here, `load_by_dlt`: the resources as a run declares the two
tables, loaded by dlt.

The scd2 boundary our batch writes is timezone-aware: written through a session whose time
zone is not UTC, it is still the moment of the write (dlt 1.32 no longer reads a naive
boundary as UTC).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dlt
import httpx
import pytest
from dlt.extract.resource import DltResource

from drone_ops_sync.pipelines.listen.write import write_batch
from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.run_record import write_record
from drone_ops_sync.pipelines.run.run_trace import RunLoads
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops import SyncReport
from drone_ops_sync.sources.drone_ops.events import EVENTS_COLUMNS
from drone_ops_sync.sources.drone_ops.internal import (
    DEFAULT_WORKSPACE,
    ENTITIES,
    EVENTS_TABLE,
    ReceivedEvent,
    RunRecord,
    event_rows,
    new_run_id,
    newest_versions,
    project_versions,
)
from drone_ops_sync.sources.drone_ops.known import held_versions
from drone_ops_sync.sources.drone_ops.run_state import record_resources
from drone_ops_sync.sources.drone_ops.source import MERGE_ON_ID, SCD2_DISPOSITION, VALIDITY_COLUMNS
from drone_ops_sync.sources.drone_ops.tables.schema import dlt_columns
from testkit.simulator_process import SimulatorHandle

from .test_events_write import project_event, second_target, warehouse
from .test_run_record_e2e import sync
from .warehouse_check import query

pytestmark = pytest.mark.e2e

VALIDITY = ("_dlt_valid_from", "_dlt_valid_to")
LOAD_ID = re.compile(r"\d{10}\.\d+")
DLT_ID = re.compile(r"[A-Za-z0-9_\-+/=]+")
NOT_UTC = {
    "duckdb": "SET TimeZone = 'Asia/Kathmandu'",
    "postgres": "SET TIME ZONE 'Asia/Kathmandu'",
}
"""A session time zone far from UTC (+05:45): a naive boundary would land 5 h 45 min off."""


def columns(target: Target, table: str) -> list[dict[str, Any]]:
    """The table's columns in order, with their types and nullability, as the engine says."""
    return query(
        warehouse(target),
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns"
        f" WHERE table_schema = '{target.dataset}' AND table_name = '{table}'"
        " ORDER BY ordinal_position",
    )


def loads(target: Target) -> list[dict[str, Any]]:
    return query(warehouse(target), f"SELECT * FROM {target.dataset}._dlt_loads ORDER BY load_id")


def load_shape(target: Target) -> list[dict[str, Any]]:
    """`_dlt_loads` with its per-load values as their order: the load id's rank (in dlt's
    form), `inserted_at`'s rank, and which earlier load's schema hash each load carries."""
    rows = loads(target)
    assert all(LOAD_ID.fullmatch(row["load_id"]) for row in rows), rows
    assert [float(row["load_id"]) for row in rows] == sorted(float(r["load_id"]) for r in rows)
    moments = sorted({row["inserted_at"] for row in rows})
    hashes = list(dict.fromkeys(row["schema_version_hash"] for row in rows))
    return [
        {
            **row,
            "load_id": rank,
            "inserted_at": moments.index(row["inserted_at"]),
            "schema_version_hash": hashes.index(row["schema_version_hash"]),
        }
        for rank, row in enumerate(rows)
    ]


def table_shape(
    target: Target, table: str, order: str, where: str = "TRUE", moments: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The table's rows with dlt's per-load values as their shape and relationship: the rank
    of the row's completed load, its `_dlt_id`'s length and alphabet, each validity value as
    its rank among the table's (null stays null), and each of `moments` as its rank."""
    load_ids = [row["load_id"] for row in loads(target) if row["status"] == 0]
    rows = query(
        warehouse(target), f"SELECT * FROM {target.dataset}.{table} WHERE {where} ORDER BY {order}"
    )
    ids = [row["_dlt_id"] for row in rows]
    assert len(set(ids)) == len(ids) and all(DLT_ID.fullmatch(i) for i in ids), ids
    timed = [*VALIDITY, *moments]
    ranks = sorted({row[name] for row in rows for name in timed if row.get(name) is not None})
    assert all(moment.tzinfo is not None for moment in ranks), ranks
    for row in rows:
        row["_dlt_load_id"] = load_ids.index(row["_dlt_load_id"])
        row["_dlt_id"] = len(row["_dlt_id"])
        for name in timed:
            if name in row and row[name] is not None:
                row[name] = ranks.index(row[name])
    return rows


def same_tables(by_dlt: Target, ours: Target, tables: dict[str, tuple[str, str]]) -> None:
    """Requires the two warehouses to hold the same tables (`{table: (order, where)}`), by
    columns, by rows as `table_shape` sees them, and the same `_dlt_loads`."""
    for table, (order, where) in {**tables, "_dlt_loads": ("load_id", "TRUE")}.items():
        assert columns(by_dlt, table) == columns(ours, table), table
        if table != "_dlt_loads":
            moments = ("recorded_at",) if table == "_sync_delivery_marks" else ()
            dlt_rows = table_shape(by_dlt, table, order, where, moments)
            assert dlt_rows, f"nothing to compare in {table}"
            assert dlt_rows == table_shape(ours, table, order, where, moments), table
    assert load_shape(by_dlt) == load_shape(ours)


def load_by_dlt(target: Target, batch: Sequence[ReceivedEvent]) -> dict[str, str]:
    """The batch as a dlt load, the reference our SQL batch must equal: the same versions (the
    held ones read through the pipeline, then newest-wins) loaded by dlt's own scd2 merge with
    the columns a run declares for `projects`, and the audit rows by its delete-insert on
    `delivery_id` with the columns every run creates `_webhook_events` with."""
    pipeline = make_pipeline(target)
    ids = (str(p["id"]) for e in batch if (p := e.project()) is not None)
    with pipeline.sql_client() as client:
        applied, outcomes = newest_versions(batch, held_versions(client, ids))
    versions = project_versions(applied.values(), new_run_id())
    resources: list[DltResource] = [
        dlt.resource(
            event_rows(batch, outcomes),
            name=EVENTS_TABLE,
            write_disposition=MERGE_ON_ID,
            primary_key=["delivery_id"],
            columns=EVENTS_COLUMNS,
        )
    ]
    if versions.num_rows:
        contract = ENTITIES["projects"].contract
        resources.append(
            dlt.resource(
                versions,
                name=contract.table,
                write_disposition=SCD2_DISPOSITION,
                columns={**dlt_columns(contract), **VALIDITY_COLUMNS},
            )
        )
    RunLoads(target, pipeline).run(resources)
    return outcomes


def test_an_event_batch_by_sql_is_the_batch_dlt_loads(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path
) -> None:
    by_dlt, ours = any_target, second_target(any_target, tmp_path)
    with httpx.Client(
        base_url=tiny_sim.base_url,
        headers={"Authorization": f"Bearer {tiny_sim.full_key}"},
        timeout=60,
    ) as api:
        first, second, third = api.get("/v1/projects").json()["projects"][:3]
    seed = [project_event(first, "d_1"), project_event(second, "d_2")]
    changed = {**first, "name": "changed by event", "updated": first["updated"] + 1}
    other: dict[str, Any] = {"delivery_id": "d_other", "event": "job.updated", "data": {}}
    batch = [
        project_event(changed, "d_3"),
        project_event(second, "d_4"),  # the version held already: not newer
        project_event(third, "d_5"),  # a project new to the warehouse
        ReceivedEvent(other, int(time.time() * 1000), signed=True),
    ]
    for target in (by_dlt, ours):  # no tables yet: dlt makes them, in both alike
        assert sorted(load_by_dlt(target, seed).values()) == ["applied", "applied"]

    before = datetime.now(UTC)
    dlt_outcomes = load_by_dlt(by_dlt, batch)
    with ours.write_lock(), make_pipeline(ours).sql_client() as client:
        client.execute_sql(NOT_UTC[ours.destination])
        our_outcomes = write_batch(client, batch)
    after = datetime.now(UTC)

    assert our_outcomes is not None, "the tables exist: the batch must go by SQL"
    assert our_outcomes == dlt_outcomes
    assert sorted(dlt_outcomes.values()) == ["applied", "applied", "ignored", "not_newer"]
    same_tables(
        by_dlt,
        ours,
        {
            "projects": ("id, _dlt_valid_from", "TRUE"),
            "_webhook_events": ("delivery_id", "TRUE"),
        },
    )
    for target in (by_dlt, ours):
        boundaries = query(
            warehouse(target),
            f"SELECT DISTINCT _dlt_valid_from AS moment FROM {target.dataset}.projects"
            f" WHERE id IN ('{changed['id']}', '{third['id']}')"
            " AND _dlt_valid_to IS NULL",
        )
        [boundary] = [row["moment"] for row in boundaries]
        # the moment of the load, whatever the session's time zone: no naive value anywhere
        assert before <= boundary <= after, (target.destination, before, boundary, after)


def a_record(report: SyncReport) -> RunRecord:
    """A run of its own, with every table's outcome as `report` had it, one issue and one
    delivery mark."""
    report = replace(report, run_id=new_run_id(), started_at=datetime.now(UTC))
    issue = {
        "run_id": report.run_id,
        "table_name": "projects",
        "record_id": "p_1",
        "field": "start_date",
        "value": "not a date",
        "problem": "not an ISO date",
    }
    marks = {"wh_1": 1_700_000_000_000}
    return RunRecord(report, DEFAULT_WORKSPACE, [issue], marks, datetime.now(UTC))


def test_a_run_record_by_sql_is_the_record_dlt_loads(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path
) -> None:
    """Into tables dlt made and has loaded rows into (a table's first rows change dlt's
    schema, which only a dlt load records: `run/sql_load.py`)."""
    by_dlt, ours = any_target, second_target(any_target, tmp_path)
    report = sync(by_dlt, tiny_sim).report
    sync(ours, tiny_sim)
    first = a_record(report)
    for target in (by_dlt, ours):
        RunLoads(target, make_pipeline(target)).run(record_resources(lambda: first))

    record = a_record(report)
    RunLoads(by_dlt, make_pipeline(by_dlt)).run(record_resources(lambda: record))
    assert RunLoads(ours, make_pipeline(ours)).write(lambda client: write_record(client, record))

    this_run = f"run_id = '{record.report.run_id}'"
    same_tables(
        by_dlt,
        ours,
        {
            "_sync_runs": ("resource", this_run),
            "_sync_issues": ("record_id", this_run),
            "_sync_delivery_marks": ("webhook_id", this_run),
        },
    )
