"""`python -m bench.duckdb_catalog`: what opening and closing one DuckDB file costs as the fleet
in it grows.

Every step of a fleet on one DuckDB file opens the file and closes it again (the file's access
lock keeps the workers' steps apart, docs/fleet.md), and DuckDB reads the whole catalog at each
open and writes it at each close that follows a write (its checkpoint). Here a file of
`--schemas` schemas is made (`--tables` tables of `--columns` columns each, about what a
workspace's dataset and its dlt staging hold; 1,000 rows in one table of each schema), then
opened and closed `--runs` times reading only, and as many times with one small INSERT, as a
run's record is written; medians of wall and CPU per open and per close.

    python -m bench.duckdb_catalog --schemas 100,500
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb


def make_file(path: Path, schemas: int, tables: int, columns: int) -> None:
    """A file of `schemas` schemas shaped alike (the first table of each with 1,000 rows)."""
    names = ", ".join(f"c{i} varchar" for i in range(columns - 1))
    values = ", ".join("'x'" for _ in range(columns - 1))
    with duckdb.connect(str(path)) as connection:
        for s in range(schemas):
            connection.execute(f"create schema s{s}")
            for t in range(tables):
                connection.execute(f"create table s{s}.t{t} (id varchar, {names})")
            connection.execute(
                f"insert into s{s}.t0 select 'id' || i, {values} from range(1000) r(i)"
            )


def open_and_close(path: Path, write: bool) -> dict[str, float]:
    """One open and one close, and whether a write came between them."""
    wall, cpu = time.perf_counter(), time.process_time()
    connection = duckdb.connect(str(path))
    opened, opened_cpu = time.perf_counter(), time.process_time()
    if write:
        connection.execute("insert into s0.t1 (id) values ('one')")
    written, written_cpu = time.perf_counter(), time.process_time()
    connection.close()
    return {
        "open_ms": (opened - wall) * 1000,
        "open_cpu_ms": (opened_cpu - cpu) * 1000,
        "close_ms": (time.perf_counter() - written) * 1000,
        "close_cpu_ms": (time.process_time() - written_cpu) * 1000,
    }


def measure(schemas: int, tables: int, columns: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="drone-bench-catalog-") as folder:
        path = Path(folder) / "fleet.duckdb"
        make_file(path, schemas, tables, columns)
        result: dict[str, Any] = {"schemas": schemas, "tables": schemas * tables}
        for label, write in (("read", False), ("write", True)):
            samples = [open_and_close(path, write) for _ in range(runs)]
            result[label] = {
                k: round(statistics.median(s[k] for s in samples), 1) for k in samples[0]
            }
        result["file_mb"] = round(path.stat().st_size / 1e6, 1)
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.duckdb_catalog", description=__doc__)
    p.add_argument("--schemas", default="100,500", help="comma-separated counts")
    p.add_argument("--tables", type=int, default=14, help="tables per schema")
    p.add_argument("--columns", type=int, default=16, help="columns per table")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args(argv)
    for schemas in (int(n) for n in a.schemas.split(",")):
        print(json.dumps(measure(schemas, a.tables, a.columns, a.runs)))


if __name__ == "__main__":
    main()
