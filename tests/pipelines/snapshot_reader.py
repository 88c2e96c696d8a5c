"""A stand-in for a BI tool, run as its own process by test_snapshot.py.

It holds the BI snapshot open read-only, as Metabase or a notebook would, and queries it every
50 ms, printing one JSON line per round on stdout: what it saw, or the error it got. `reopen`
on stdin closes the connection and connects again (what a BI tool's refresh does); `stop` or
the end of stdin ends it, and it ends by itself after `--max-seconds`. Only DuckDB is imported,
so nothing of the code under test can hide a problem here.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from typing import Any

import duckdb

INTERVAL_SECONDS = 0.05


def _commands() -> queue.Queue[str]:
    """Lines of stdin, read by a thread so the query loop never blocks on them."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            lines.put(line.strip())
        lines.put("stop")

    threading.Thread(target=read, daemon=True).start()
    return lines


def _round(con: duckdb.DuckDBPyConnection, dataset: str, mart: str) -> dict[str, Any]:
    def scalar(sql: str) -> Any:
        row = con.execute(sql).fetchone()
        return row[0] if row else None

    return {
        "run_id": scalar("SELECT run_id FROM _snapshot_info"),
        "published_at": str(scalar("SELECT published_at FROM _snapshot_info")),
        "mart_rows": scalar(f"SELECT count(*) FROM {dataset}_marts.{mart}"),
        "project_versions": scalar(f"SELECT count(*) FROM {dataset}.projects"),
        "deliveries": scalar(f"SELECT count(*) FROM {dataset}.webhook_deliveries"),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("snapshot")
    parser.add_argument("--dataset", default="drone_ops")
    parser.add_argument("--mart", default="dim_projects")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args()
    commands = _commands()
    generation = 0
    con: duckdb.DuckDBPyConnection | None = None
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline:
        try:
            command = commands.get_nowait()
        except queue.Empty:
            command = ""
        if command == "stop":
            break
        if command == "reopen":
            if con is not None:
                con.close()
                con = None
            generation += 1
        record: dict[str, Any] = {"generation": generation, "ts": time.time()}
        try:
            if con is None:
                con = duckdb.connect(args.snapshot, read_only=True)
            record.update(_round(con, args.dataset, args.mart))
        except Exception as exc:  # every failure is the finding: report it and go on
            record["error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(record), flush=True)
        time.sleep(INTERVAL_SECONDS)
    if con is not None:
        con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
