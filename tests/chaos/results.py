"""Tallies of the chaos suite: fault kind -> tries, survived, rows lost, duplicates.

Every chaos case appends one JSON line per try to a file shared by all pytest-xdist workers of
a session (`<session basetemp>/chaos-results.jsonl`). The summary is printed at the end of the
session and, when the environment variable `CHAOS_REPORT` names a file, written there as JSON
(docs/reliability.md is written from these figures). `python -m tests.chaos.results FILE`
prints the table of a results file again.

Columns:
- tries: how many times the fault was applied (one run, one kill, one bad-data server...)
- run ok: how many of the faulted runs themselves reported success (for kills and signals,
  which end the run, how many of the clean runs after them did)
- survived: how many tries ended with the warehouse equal to the API (after at most one clean
  run for the kinds that allow a failed run) and every other check of `truth.py` passing
- rows lost: ids the API shows that the warehouse had no (or a stale) current row for
- duplicates: surplus current rows (an id current more than once)
- stale: current rows of records the API no longer shows
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPORT_ENV = "CHAOS_REPORT"
RESULTS_FILE = "chaos-results.jsonl"


@dataclass
class Tally:
    kind: str
    tries: int = 0
    run_ok: int = 0
    survived: int = 0
    rows_lost: int = 0
    duplicates: int = 0
    stale: int = 0


class ChaosResults:
    """Appends tries to a JSON-lines file; safe across threads and processes (one short
    `O_APPEND` write per line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def add(
        self,
        kind: str,
        *,
        survived: bool,
        run_ok: bool | None = None,
        rows_lost: int = 0,
        duplicates: int = 0,
        stale: int = 0,
        note: str = "",
    ) -> None:
        line = json.dumps(
            {
                "kind": kind,
                "survived": bool(survived),
                "run_ok": run_ok,
                "rows_lost": int(rows_lost),
                "duplicates": int(duplicates),
                "stale": int(stale),
                "note": note[:500],
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            },
            sort_keys=True,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")


def read_tries(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    tries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            tries.append(json.loads(line))
    return tries


def tally(tries: Iterable[dict[str, Any]]) -> list[Tally]:
    by_kind: dict[str, Tally] = {}
    for entry in tries:
        row = by_kind.setdefault(entry["kind"], Tally(entry["kind"]))
        row.tries += 1
        row.run_ok += 1 if entry.get("run_ok") else 0
        row.survived += 1 if entry.get("survived") else 0
        row.rows_lost += int(entry.get("rows_lost") or 0)
        row.duplicates += int(entry.get("duplicates") or 0)
        row.stale += int(entry.get("stale") or 0)
    return sorted(by_kind.values(), key=lambda row: row.kind)


def format_table(rows: list[Tally]) -> str:
    header = ("fault kind", "tries", "run ok", "survived", "rows lost", "duplicates", "stale")
    body = [
        (r.kind, r.tries, r.run_ok, r.survived, r.rows_lost, r.duplicates, r.stale) for r in rows
    ]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *body, strict=True)]
    lines = []
    for number, line in enumerate([header, *body]):
        cells = [
            str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(cells))
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def write_report(tries_path: Path, report_path: Path) -> None:
    rows = tally(read_tries(tries_path))
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(
        json.dumps({"kinds": [asdict(row) for row in rows]}, indent=2) + "\n", encoding="utf-8"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: python -m tests.chaos.results <{RESULTS_FILE}>", file=sys.stderr)
        return 2
    print(format_table(tally(read_tries(Path(argv[1])))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
