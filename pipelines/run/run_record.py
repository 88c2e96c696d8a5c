"""The run's record (`_sync_runs`, `_sync_issues`, `_sync_delivery_marks`), written when the
run's loads are done: by SQL in one transaction once dlt has made its tables, else by dlt.

Why SQL: the record cannot join a data load (its rows carry each table's outcome, and the
marks may move only after every delivery load succeeded), and a load of its own costs more
than a few rows should (docs/sync-design.md). It is written as the event receiver writes a
batch (`sql_load.py`) and recorded in `_dlt_loads` as a completed load, so readers that count
only completed loads see it, and a run killed before the commit leaves nothing of it. dlt
loads it instead (`RECORD_RESOURCES`) on a new warehouse, for a new column, and when the
transaction failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from dlt.common.storages.load_package import create_load_id
from dlt.destinations.exceptions import DestinationException
from dlt.destinations.sql_client import SqlClientBase
from dlt.pipeline.exceptions import PipelineStepFailed

from drone_ops_sync.sources.drone_ops import RECORD_RESOURCES
from drone_ops_sync.sources.drone_ops.internal import (
    EVENTS_TABLE,
    RunRecord,
    SyncRun,
    record_tables,
    redact,
)
from drone_ops_sync.sources.drone_ops.internal import settings as source_settings

from .errors import root_cause
from .run_trace import RunLoads
from .sql_load import fits, insert_rows, record_load, table_columns

log = logging.getLogger(__name__)


def record_run(
    loads: RunLoads, run: SyncRun, source: Callable[[], Any], record: RunRecord
) -> str | None:
    """Records the run: by SQL when it can (`write_record`), else through the source's
    run-state resources in one dlt load. Returns why it could not be recorded, or None."""
    run.record = record
    try:
        if loads.write(lambda client: write_record(client, record)):
            return None
    except DestinationException as exc:
        # rolled back: the dlt load writes the record, or says why it cannot
        log.info("the run record goes through a dlt load: %s", redact(str(exc)))
    try:
        loads.run(source().with_resources(*RECORD_RESOURCES))
    except PipelineStepFailed as exc:
        return f"could not record the run in {source_settings.RUNS_TABLE}: {root_cause(exc)}"
    return None


def write_record(sql_client: SqlClientBase[Any], record: RunRecord) -> bool:
    """Writes the record's rows in one transaction through `sql_client` (opened here, closed
    at the end); False, having written nothing, when a table (or `_webhook_events`, which the
    dlt load would create) is missing or lacks a column the rows carry."""
    tables = record_tables(record)
    with sql_client as client:
        columns = {name: table_columns(client, name) for name in (*tables, EVENTS_TABLE)}
        if columns[EVENTS_TABLE] is None:
            return False
        if not all(fits(rows, columns[name]) for name, rows in tables.items()):
            return False
        load_id = create_load_id()
        with client.begin_transaction():
            for name, rows in tables.items():
                insert_rows(client, name, rows, columns[name] or (), load_id)
            record_load(client, load_id, record.finished_at)
    return True
