"""The fast path for webhook deliveries: request payloads parsed by DuckDB, in batches.

A delivery's `request_payload` is JSON text whose fields become columns; DuckDB's JSON
functions parse it outside the GIL, where one `orjson.loads` per entry would compete with
every request. The one process-wide engine in `sources/`: a small, capped, single-threaded
in-memory DuckDB (no file, no network).
"""

from __future__ import annotations

import logging
import threading

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from .breaches import Issue
from .lines import LineBuffer, read_lines, typed_batch
from .rows import MAX_TIMESTAMP_MS, PAYLOAD_COLUMNS, Record, delivery_row, with_required_fields
from .schema import ARROW_TYPES, Contract

log = logging.getLogger(__name__)

_PAYLOAD_SQL = f"""
WITH parsed AS (
    SELECT CASE WHEN json_valid(request_payload) THEN request_payload END AS payload
    FROM payloads
), fields AS (
    -- one parse per payload: every field is taken in a single multi-path extract
    SELECT CASE WHEN json_type(payload) = 'OBJECT' THEN json_extract(
        payload, ['$.delivery_id', '$.event', '$.timestamp', '$.workspace_id', '$.data']
    ) END AS f
    FROM parsed
), typed AS (
    SELECT
        f[1] AS delivery_id, coalesce(json_type(f[1]), 'NULL') AS delivery_id_type,
        f[2] AS event, coalesce(json_type(f[2]), 'NULL') AS event_type,
        f[3] AS ts, coalesce(json_type(f[3]), 'NULL') AS ts_type,
        f[4] AS workspace_id, coalesce(json_type(f[4]), 'NULL') AS workspace_id_type,
        f[5] AS data, coalesce(json_type(f[5]), 'NULL') AS data_type
    FROM fields
)
SELECT
    delivery_id ->> '$' AS delivery_id,
    event ->> '$' AS event,
    TRY_CAST(ts AS BIGINT) AS event_timestamp,
    workspace_id ->> '$' AS workspace_id,
    CASE WHEN data_type <> 'NULL' THEN data::VARCHAR END AS data,
    coalesce(
        delivery_id_type IN ('VARCHAR', 'NULL')
        AND event_type IN ('VARCHAR', 'NULL')
        AND workspace_id_type IN ('VARCHAR', 'NULL')
        AND (
            ts_type = 'NULL'
            OR (
                ts_type IN ('BIGINT', 'UBIGINT')
                AND abs(TRY_CAST(ts AS BIGINT)) <= {MAX_TIMESTAMP_MS}
            )
        ),
        FALSE
    ) AS well_typed
FROM typed
"""
PAYLOAD_CHUNK_ROWS = 1_000
"""Payloads parsed per query, so that their parsed JSON fits `PAYLOAD_ENGINE_MEMORY`
(docs/performance.md)."""
PAYLOAD_ENGINE_MEMORY = "64MB"
"""Two spill threads parse at once."""
_duckdb = threading.local()
_engine: list[duckdb.DuckDBPyConnection] = []
_engine_lock = threading.Lock()


def _payload_engine() -> duckdb.DuckDBPyConnection:
    """One small in-memory DuckDB for the whole process (a cursor per thread): single-threaded,
    since the spill pool is the parallelism, and capped, so the walk's footprint is bounded."""
    with _engine_lock:
        if not _engine:
            _engine.append(
                duckdb.connect(config={"threads": 1, "memory_limit": PAYLOAD_ENGINE_MEMORY})
            )
        return _engine[0]


def delivery_table(
    contract: Contract, lines: LineBuffer, webhook_id: str, run_id: str, issues: list[Issue]
) -> pa.Table:
    """The typed webhook_deliveries batch of one webhook's log entries, given as JSON lines:
    typed by Arrow's JSON reader, payloads parsed by DuckDB, both outside the GIL; a batch
    with anything unusual takes `typed_batch`'s row-by-row path, which reports each breach."""

    def row(record: Record, **_: object) -> Record:
        return delivery_row(record, webhook_id)

    def read() -> pa.Table | None:
        return _delivery_table_fast(contract, lines, webhook_id)

    return typed_batch(contract, lines, run_id=run_id, issues=issues, row=row, read=read)


def _delivery_table_fast(contract: Contract, lines: LineBuffer, webhook_id: str) -> pa.Table | None:
    declared = contract.columns
    from_entry = [c for c in declared if c.name != "webhook_id" and c.name not in PAYLOAD_COLUMNS]
    arrays = read_lines(from_entry, lines)
    if arrays is None:
        return None
    payloads = arrays["request_payload"]
    connection = getattr(_duckdb, "connection", None)
    if connection is None:
        connection = _duckdb.connection = _payload_engine().cursor()
    parts = []
    try:
        # in chunks: DuckDB holds each chunk's parsed JSON whole, many times its text
        for start in range(0, len(payloads), PAYLOAD_CHUNK_ROWS):
            chunk = payloads.slice(start, PAYLOAD_CHUNK_ROWS)
            connection.register("payloads", pa.table({"request_payload": chunk}))
            try:
                parts.append(connection.sql(_PAYLOAD_SQL).to_arrow_table())
            finally:
                connection.unregister("payloads")
    except duckdb.Error as exc:
        # never fail a walk over a faster path: the row-by-row path gives the same table
        log.warning("delivery payloads parsed row by row: %s", exc)
        return None
    parsed = pa.concat_tables(parts)
    if not pc.all(parsed.column("well_typed")).as_py():
        return None
    arrays["webhook_id"] = pa.array([webhook_id] * lines.count, pa.string())
    timestamps = parsed.column("event_timestamp").combine_chunks()
    arrays["event_timestamp"] = timestamps.cast(pa.timestamp("ms", tz="UTC")).cast(
        ARROW_TYPES["ts"]
    )
    for name in ("delivery_id", "event", "workspace_id", "data"):
        arrays[name] = parsed.column(name).combine_chunks().cast(pa.string())
    return with_required_fields(pa.table({c.name: arrays[c.name] for c in declared}))
