"""The `dlt floor`: the floor's walk (bench/floor.py) loaded by the simplest dlt pipeline.

What it answers: how much of our sync's cost is dlt's machinery and how much is our code. It
walks exactly the floor's pages, parses each body, batches each table's items into Arrow tables
of 1,000 rows under one schema per table (dlt costs about 1.8 ms per yielded Arrow table), and
loads them into a fresh DuckDB with one `pipeline.run` after the walk: the entity tables as
scd2 merges, the delivery logs merged on their id. Nothing else: no typing to a contract, no
flattening of `created_by`, no millisecond timestamps, no spill, no change set, no deletion
checks, no run record, no overlap of walk and load.

scd2 on Arrow rows needs a content hash (dlt's `_dlt_id` on Arrow input is random, so every
row would look changed): each item's canonical JSON is hashed into `_row_hash`, the table's
`row_version_column_name`, so a re-run with nothing changed writes no version.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections import defaultdict
from typing import Any

import orjson
import pyarrow as pa

from .floor import FloorWalk

BATCH_ROWS = 1_000
ROW_HASH = "_row_hash"
# the floor's paths, each to the table its items go to and the key they are listed under
TABLES = (
    (re.compile(r"^/v1/projects$"), "projects", "projects"),
    (re.compile(r"^/v1/projects/[^/]+/jobs$"), "jobs", "jobs"),
    (re.compile(r"^/v1/job-types$"), "job_types", "job_types"),
    (re.compile(r"^/v1/team$"), "team", "team"),
    (re.compile(r"^/v1/webhooks$"), "webhooks", "webhooks"),
    (re.compile(r"^/v1/webhooks/[^/]+$"), "webhook_deliveries", "logs"),
)
APPENDED = ("webhook_deliveries",)
"""Tables whose rows are events, not versions: merged on their id instead of kept as scd2."""


class PageTables:
    """Each page's items, hashed and batched per table into Arrow tables (thread-safe: the
    walk's threads call `page`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.tables: dict[str, list[pa.Table]] = defaultdict(list)

    def page(self, path: str, body: bytes) -> None:
        found = next(((t, k) for pattern, t, k in TABLES if pattern.match(path)), None)
        if found is None:
            return
        table, key = found
        items = orjson.loads(body).get(key) or []
        for item in items:
            canonical = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
            item[ROW_HASH] = hashlib.blake2b(canonical, digest_size=16).hexdigest()
        with self._lock:
            pending = self._pending[table]
            pending.extend(items)
            if len(pending) < BATCH_ROWS:
                return
            self._pending[table] = []
        self._add(table, pending)

    def finish(self) -> dict[str, list[pa.Table]]:
        """Each table's batches under one schema (a nested object's fields differ from page to
        page, e.g. `created_by` with or without `name`), sliced again into `BATCH_ROWS`."""
        for table, pending in list(self._pending.items()):
            if pending:
                self._add(table, pending)
        self._pending.clear()
        unified = {}
        for table, batches in self.tables.items():
            whole = pa.concat_tables(batches, promote_options="permissive")
            unified[table] = [
                whole.slice(start, BATCH_ROWS) for start in range(0, whole.num_rows, BATCH_ROWS)
            ]
        return unified

    def _add(self, table: str, items: list[dict[str, Any]]) -> None:
        batch = pa.Table.from_pylist(items)
        with self._lock:
            self.tables[table].append(batch)


def run_dlt_floor(spec: dict[str, Any], *, log_pages: int | None) -> dict[str, Any]:
    """One walk and one `pipeline.run` into the spec's DuckDB file (fresh or loaded before)."""
    os.environ["NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_ID"] = "true"
    import dlt

    started = time.monotonic()
    pages = PageTables()
    walk = FloorWalk(
        spec["base_url"],
        spec["api_key"],
        spec["max_workers"],
        log_pages=log_pages,
        on_page=pages.page,
    )
    walked = walk.run()
    tables = pages.finish()
    walk_seconds = time.monotonic() - started
    pipeline = dlt.pipeline(
        "dlt_floor",
        destination=dlt.destinations.duckdb(spec["database"]),
        dataset_name="dlt_floor",
        pipelines_dir=spec["pipelines_dir"],
    )
    scd2: Any = {"disposition": "merge", "strategy": "scd2", "row_version_column_name": ROW_HASH}
    by_id: Any = {"disposition": "merge", "strategy": "delete-insert"}
    resources = [
        dlt.resource(
            batches,
            name=name,
            primary_key="id",
            write_disposition=by_id if name in APPENDED else scd2,
        )
        for name, batches in tables.items()
    ]
    info = pipeline.run(resources, loader_file_format="parquet")
    info.raise_on_failed_jobs()
    seconds = time.monotonic() - started
    return {
        "seconds": seconds,
        "walk_seconds": walk_seconds,
        "load_seconds": seconds - walk_seconds,
        "requests": walked.requests,
        "rows_seen": sum(t.num_rows for batches in tables.values() for t in batches),
    }
