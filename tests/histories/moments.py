"""The as-of functions over a whole history (docs/as-of.md): every moment the warehouse changed
is kept with what it then held (the model's tables, checked equal to the warehouse's current
rows at that moment); at the end of the history the history marts are built once (dbt, whose
on-run-end hook makes `<table>_as_of` and `<table>_changed`) and

- `<table>_as_of(moment)` must return exactly what was held at each moment (before the first
  sync: nothing);
- `<table>_changed(a, b)` exactly the difference of two moments' holdings, for each moment and
  the next and for the first and the last;
- a naive timestamp is read in the session's time zone: with the session in Europe/Berlin,
  `_as_of` of a moment's local wall-clock time, naive, returns what `_as_of` of the aware
  moment does.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tests.chaos.truth import Reader
from tests.pipelines.as_of_check import (
    HISTORY,
    as_of_problems,
    build_history_marts,
    changed_problems,
    literal,
)

from .expected import Tables
from .world import World

SESSION_ZONE = "Europe/Berlin"


class Moments:
    def __init__(self) -> None:
        self.kept: list[tuple[datetime, Tables]] = [
            (datetime.now(UTC), {table: {} for table in HISTORY})
        ]

    def __len__(self) -> int:
        return len(self.kept)

    def add(self, at: datetime, tables: Tables) -> None:
        self.kept.append((at, {table: copy.deepcopy(tables[table]) for table in HISTORY}))

    def problems(self, world: World, dbt_dir: Path) -> list[str]:
        build_history_marts(world.target, dbt_dir)
        marts = f"{world.target.dataset}_marts"
        problems: list[str] = []
        with Reader(world.warehouse, world.target.dataset) as reader:
            rows_of = reader.rows
            for at, held in self.kept:
                for table in HISTORY:
                    problems += [
                        f"{table}_as_of({at}): {p}"
                        for p in as_of_problems(rows_of, marts, table, literal(at), held[table])
                    ]
            pairs = list(zip(self.kept, self.kept[1:], strict=False))
            pairs.append((self.kept[0], self.kept[-1]))
            for (a, held_a), (b, held_b) in pairs:
                for table in HISTORY:
                    problems += changed_problems(
                        rows_of, marts, table, (a, b), (held_a[table], held_b[table])
                    )
            problems += _naive_problems(reader, marts, self.kept[-1][0], world)
        return problems


def _naive_problems(reader: Reader, marts: str, at: datetime, world: World) -> list[str]:
    """The same moment asked aware and naive (its wall-clock time in the session's zone)."""
    aware = {
        table: _rows(reader, f"select * from {marts}.{table}_as_of({literal(at)})")
        for table in HISTORY
    }
    local = at.astimezone(ZoneInfo(SESSION_ZONE)).replace(tzinfo=None)
    zone = "SET TimeZone = " if world.target.destination == "duckdb" else "SET TIME ZONE "
    reader.rows(f"{zone}'{SESSION_ZONE}'")
    try:
        naive = {
            table: _rows(
                reader, f"select * from {marts}.{table}_as_of(timestamp '{local.isoformat(' ')}')"
            )
            for table in HISTORY
        }
    finally:
        reader.rows(f"{zone}'UTC'")
    return [
        f"{table}_as_of: naive {local} in {SESSION_ZONE} differs from the aware {at}"
        for table in HISTORY
        if naive[table] != aware[table]
    ]


def _rows(reader: Reader, call: str) -> list[tuple[Any, ...]]:
    """A function's rows as tuples of their values, in one order, comparable across two
    calls in different session time zones (a timestamp is compared as the instant it is)."""
    rows = [tuple(_instant(value) for value in row.values()) for row in reader.rows(call)]
    return sorted(rows, key=repr)


def _instant(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else value
