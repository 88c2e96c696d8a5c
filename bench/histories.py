"""`python -m bench.histories`: the generated histories' long profile, on both warehouses.

Runs the state machine of `tests/histories/` (the suite runs a few derandomized histories per
warehouse) with many more and longer histories, drawn afresh: rounds of `--round` histories of
up to `--steps` steps each, one warehouse after the other, until each warehouse's share of
`--minutes` is spent (a round that has started finishes) or `--histories` ran. Prints, per
warehouse and in all: histories, steps, runs, deliveries, as-of checks, wall time; then that none
failed, or the first failing history, shrunk, and exit status 1.

    python -m bench.histories --minutes 15
    python -m bench.histories --warehouses duckdb --histories 20 --steps 60 --no-as-of
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import settings

from testkit.postgres import create_database, running_postgres
from tests.histories.machine import Setting, Tally
from tests.histories.profiles import LONG, run_histories
from tests.histories.world import Place

WAREHOUSES = ("duckdb", "postgres")
COLUMNS = ("histories", "steps", "runs", "deliveries", "as_of_checks")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.histories", description=__doc__.splitlines()[0]
    )
    p.add_argument("--warehouses", default=",".join(WAREHOUSES), help="duckdb,postgres")
    p.add_argument("--minutes", type=float, default=15.0, help="in all, split between warehouses")
    p.add_argument(
        "--histories", type=int, default=LONG.max_examples, help="at most, per warehouse"
    )
    p.add_argument(
        "--steps", type=int, default=LONG.stateful_step_count, help="at most, per history"
    )
    p.add_argument("--round", type=int, default=3, help="histories per Hypothesis run")
    p.add_argument("--no-as-of", action="store_true", help="skip the as-of check at each end")
    args = p.parse_args(argv)
    args.warehouses = [w.strip() for w in args.warehouses.split(",") if w.strip()]
    if not args.warehouses or set(args.warehouses) - set(WAREHOUSES):
        p.error(f"--warehouses: choose from {','.join(WAREHOUSES)}")
    return args


@contextmanager
def place_for(kind: str, root: Path) -> Iterator[Place]:
    """A DuckDB folder, or a database of a PostgreSQL server started here and stopped after."""
    if kind == "duckdb":
        yield Place("duckdb", root)
        return
    with running_postgres() as server:
        create_database(server, "histories")
        dsn = server.dsn("histories")
        os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = dsn
        try:
            yield Place("postgres", root, dsn)
        finally:
            os.environ.pop("DESTINATION__POSTGRES__CREDENTIALS", None)


def run_warehouse(
    kind: str, root: Path, args: argparse.Namespace, seconds: float, tally: Tally
) -> None:
    """Rounds of histories on one warehouse until its time or its count is spent, counted in
    `tally` (so a failure still reports what ran before it)."""
    with place_for(kind, root / kind) as place:
        setting = Setting(place, root / f"dbt-{kind}", not args.no_as_of, tally)
        deadline = time.monotonic() + seconds
        while setting.tally.histories < args.histories and time.monotonic() < deadline:
            size = min(args.round, args.histories - setting.tally.histories)
            run_histories(
                setting, settings(LONG, max_examples=size, stateful_step_count=args.steps)
            )


def report(tallies: dict[str, Tally]) -> str:
    lines = [f"{'warehouse':<10}" + "".join(f"{c:>14}" for c in (*COLUMNS, "wall"))]
    for kind, tally in tallies.items():
        values = [getattr(tally, c) for c in COLUMNS]
        lines.append(
            f"{kind:<10}" + "".join(f"{v:>14,}" for v in values) + f"{_wall(tally.seconds):>14}"
        )
    total = Tally(**{c: sum(getattr(t, c) for t in tallies.values()) for c in COLUMNS})
    total.seconds = sum(t.seconds for t in tallies.values())
    lines.append(
        f"{'all':<10}"
        + "".join(f"{getattr(total, c):>14,}" for c in COLUMNS)
        + f"{_wall(total.seconds):>14}"
    )
    return "\n".join(lines)


def _histories(count: int) -> str:
    return f"{count:,} histor{'y' if count == 1 else 'ies'}"


def _wall(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="drone-histories-") as folder:
        os.environ.setdefault("DLT_DATA_DIR", str(Path(folder) / "dlt"))
        share = args.minutes * 60 / len(args.warehouses)
        try:
            for kind in args.warehouses:
                tallies[kind] = Tally()
                run_warehouse(kind, Path(folder), args, share, tallies[kind])
        except BaseException as failure:
            print(report(tallies))
            print(f"FAILED after {_wall(time.monotonic() - started)}: {failure}", file=sys.stderr)
            raise
    print(report(tallies))
    print(
        f"{_histories(sum(t.histories for t in tallies.values()))} on {', '.join(tallies)}"
        f" in {_wall(time.monotonic() - started)}: none failed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
