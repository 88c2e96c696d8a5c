"""`python -m bench.duckdb_catalog` at a small count: the file it makes holds every schema's
tables, and each open and close is measured both ways. No timing assertions."""

from __future__ import annotations

from pathlib import Path

import duckdb

from bench.duckdb_catalog import make_file, measure


def test_the_catalog_bench_makes_the_file_it_says_and_measures_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "fleet.duckdb"
    make_file(path, schemas=3, tables=2, columns=4)
    with duckdb.connect(str(path), read_only=True) as connection:
        tables = connection.execute(
            "select count(*) from information_schema.tables where table_schema like 's%'"
        ).fetchone()
        rows = connection.execute("select count(*) from s2.t0").fetchone()
    assert tables == (6,) and rows == (1000,)
    result = measure(schemas=2, tables=2, columns=3, runs=1)
    assert result["tables"] == 4
    for label in ("read", "write"):
        assert set(result[label]) == {"open_ms", "open_cpu_ms", "close_ms", "close_cpu_ms"}
        assert all(value >= 0 for value in result[label].values())
