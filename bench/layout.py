"""`python -m bench.layout`: where a fleet's raw rows should live, measured both ways.

The two layouts docs/fleet.md weighs, holding the same rows:

- `dataset`: a dataset (schema) per workspace, `<dataset>_<name>`, tables as for one workspace;
- `column`: one set of tables for the fleet, a `workspace` column in every row, each
  workspace's loads scoped to its rows (`destination_scope` on workspace and id).

The rows are real: `--workspaces` simulators with different seeds are synced once by the real
sync into a scratch warehouse, and the current versions of their projects and jobs (the
history tables, the bulk of a workspace) are then loaded into a fresh warehouse per layout by
one dlt pipeline per workspace with the sync's scd2 hints, so the loader, the hints and the
rows are the same and only the layout differs. Per destination it measures the initial loads
(one after another; on PostgreSQL also all at once, each pipeline in a thread), a change load
(5% of one workspace's jobs changed), the read each run starts with (one workspace's current
ids and row hashes), and a question across workspaces (current jobs by workspace and status).

    python -m bench.layout --workspaces 4 --scale small
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import dlt
import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from bench.runner import simulator_scale
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from drone_ops_sync.sources.drone_ops.internal import workspace_dataset
from testkit.postgres import RunningPostgres, running_postgres
from testkit.simulator_process import running_simulator

TABLES = ("projects", "jobs")
BASE = "drone_ops"
SHARED = "drone_ops_fleet"
DLT_COLUMNS = ("_dlt_valid_from", "_dlt_valid_to", "_dlt_load_id", "_dlt_id")
LAYOUTS = ("dataset", "column")


def fleet_rows(root: Path, names: Sequence[str], scale: str) -> dict[str, dict[str, pa.Table]]:
    """Each workspace's current projects and jobs, synced from its own simulator."""
    database = root / "source.duckdb"
    rows: dict[str, dict[str, pa.Table]] = {}
    with ExitStack() as stack:
        for number, name in enumerate(names):
            sim_scale, extra = simulator_scale(scale)
            sim = stack.enter_context(
                running_simulator(seed=100 + number, scale=sim_scale, extra_args=extra)
            )
            target = Target(database=database, pipelines_dir=root / "p").for_workspace(name)
            config = read_source_config({"base_url": sim.base_url, "api_key": sim.read_key})
            if not run_sync(target, config=config).ok:
                raise SystemExit(f"the sync of {name} failed")
    with duckdb.connect(str(database), read_only=True) as con:
        for name in names:
            dataset = workspace_dataset(BASE, name)
            rows[name] = {
                table: con.sql(
                    f"select * exclude ({', '.join(DLT_COLUMNS)}) from {dataset}.{table}"
                    " where _dlt_valid_to is null"
                ).to_arrow_table()
                for table in TABLES
            }
    return rows


def _resource(table: str, data: pa.Table, scope: str) -> Any:
    return dlt.resource(
        data,
        name=table,
        write_disposition={
            "disposition": "merge",
            "strategy": "scd2",
            "row_version_column_name": "_row_hash",
            "destination_scope": scope,
        },
    )


def load(destination: Any, layout: str, name: str, data: dict[str, pa.Table], root: Path) -> None:
    """One workspace's tables, as the layout puts them."""
    if layout == "dataset":
        dataset, scope = workspace_dataset(BASE, name), '"id" IN (SELECT "id" FROM {staging_table})'
        tables = data
    else:
        dataset = SHARED
        scope = f'"workspace" = \'{name}\' AND "id" IN (SELECT "id" FROM {{staging_table}})'
        tables = {
            table: rows.add_column(0, "workspace", pa.array([name] * rows.num_rows, pa.string()))
            for table, rows in data.items()
        }
    pipeline = dlt.pipeline(
        pipeline_name=f"layout_{layout}_{name}",
        destination=destination(name),
        dataset_name=dataset,
        pipelines_dir=str(root / "pipelines"),
    )
    resources = [_resource(table, rows, scope) for table, rows in tables.items()]
    if _is_duckdb(pipeline):
        pipeline.run(resources, loader_file_format="parquet")
    else:
        pipeline.run(resources)


def _is_duckdb(pipeline: dlt.Pipeline) -> bool:
    return pipeline.destination.destination_name == "duckdb"


def changed(rows: pa.Table, share: float) -> pa.Table:
    """The first `share` of the rows with a new name and row hash: a change set."""
    count = max(1, int(rows.num_rows * share))
    head = rows.slice(0, count)
    names = pc.binary_join_element_wise(head["name"], pa.scalar("*"), "")
    head = head.set_column(head.schema.get_field_index("name"), "name", names)
    hashes = pc.binary_join_element_wise(head["_row_hash"], pa.scalar("x"), "")
    return head.set_column(head.schema.get_field_index("_row_hash"), "_row_hash", hashes)


def timed(action: Callable[[], Any], repeats: int = 1) -> float:
    """The median wall seconds of `repeats` calls."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(
    layout: str,
    destination: Any,
    query: Callable[[str], Any],
    rows: dict[str, dict[str, pa.Table]],
    root: Path,
    concurrent: bool,
) -> dict[str, float]:
    """Every figure of one layout on one destination."""
    names = list(rows)

    def initial() -> None:
        for name in names:
            load(destination, layout, name, rows[name], root)

    figures = {"initial": timed(initial)}
    first = names[0]
    change = {"jobs": changed(rows[first]["jobs"], 0.05)}
    figures["change"] = timed(lambda: load(destination, layout, first, change, root))
    dataset = workspace_dataset(BASE, first) if layout == "dataset" else SHARED
    own = "" if layout == "dataset" else f" and workspace = '{first}'"
    figures["known_read"] = timed(
        lambda: query(f"select id, _row_hash from {dataset}.jobs where _dlt_valid_to is null{own}"),
        repeats=5,
    )
    if layout == "dataset":
        union = " union all ".join(
            f"select '{n}' as workspace, status from {workspace_dataset(BASE, n)}.jobs"
            " where _dlt_valid_to is null"
            for n in names
        )
        question = f"select workspace, status, count(*) from ({union}) group by 1, 2"
    else:
        question = (
            f"select workspace, status, count(*) from {SHARED}.jobs"
            " where _dlt_valid_to is null group by 1, 2"
        )
    figures["across"] = timed(lambda: query(question), repeats=5)
    if concurrent:
        fresh = root / f"again-{layout}"
        figures["initial_concurrent"] = timed(
            lambda: _all_at_once(destination, layout, rows, fresh)
        )
    return figures


def _all_at_once(
    destination: Any, layout: str, rows: dict[str, dict[str, pa.Table]], root: Path
) -> None:
    errors: list[str] = []

    def one(name: str) -> None:
        try:
            load(destination, f"{layout}", name, rows[name], root)
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")

    threads = [threading.Thread(target=one, args=(name,)) for name in rows]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError("; ".join(errors))


@contextmanager
def duckdb_destination(root: Path, layout: str) -> Iterator[tuple[Any, Callable[[str], Any]]]:
    path = root / f"{layout}.duckdb"

    def query(sql: str) -> Any:
        with duckdb.connect(str(path), read_only=True) as con:
            return con.execute(sql).fetchall()

    yield (lambda name: dlt.destinations.duckdb(str(path))), query


@contextmanager
def postgres_destination(
    server: RunningPostgres, layout: str
) -> Iterator[tuple[Any, Callable[[str], Any]]]:
    import psycopg2

    dsn = server.dsn(layout)

    def query(sql: str) -> Any:
        with psycopg2.connect(dsn) as con, con.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def destination(name: str) -> Any:
        # the column layout shares its tables, so each workspace's pipeline needs a staging
        # schema of its own, or concurrent merges would overwrite each other's staging rows
        return dlt.destinations.postgres(
            credentials=dsn, staging_dataset_name_layout=f"%s_staging_{name}"
        )

    yield destination, query


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layout")
    parser.add_argument("--workspaces", type=int, default=4)
    parser.add_argument("--scale", default="small", choices=("tiny", "small", "tenth"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [f"ws{number}" for number in range(args.workspaces)]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="drone-ops-layout-") as scratch:
        root = Path(scratch)
        rows = fleet_rows(root, names, args.scale)
        for layout in LAYOUTS:
            with duckdb_destination(root, layout) as (destination, query):
                key = f"duckdb/{layout}"
                results[key] = measure(layout, destination, query, rows, root / key, False)
        with running_postgres(tuple(LAYOUTS)) as server:
            for layout in LAYOUTS:
                with postgres_destination(server, layout) as (destination, query):
                    key = f"postgres/{layout}"
                    results[key] = measure(layout, destination, query, rows, root / key, True)
    jobs = sum(tables["jobs"].num_rows for tables in rows.values())
    print(f"{args.workspaces} workspaces at {args.scale}: {jobs:,} current jobs in all")
    columns = list(dict.fromkeys(name for figures in results.values() for name in figures))
    print(f"{'destination/layout':<20}" + "".join(f"{name:>20}" for name in columns))
    for key, figures in results.items():
        cells = (
            f"{figures[name]:>19.3f}s" if name in figures else f"{'-':>20}" for name in columns
        )
        print(f"{key:<20}" + "".join(cells))
    if args.output is not None:
        args.output.write_text(json.dumps({"workspaces": args.workspaces, "results": results}))


if __name__ == "__main__":
    main()
