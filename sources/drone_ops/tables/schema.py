"""The vocabulary of a table's shape: column kinds, their Arrow types, and the data contract.
Each table's own contract is declared in `entities.py`; this says what one is made of, so the
transforms can type any table without knowing which tables exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
from dlt.common.schema.typing import TColumnSchema

from .. import settings

ColumnKind = Literal["str", "int", "float", "bool", "ts", "date", "json"]

ARROW_TYPES: dict[ColumnKind, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    # µs keeps every API millisecond exactly and maps to TIMESTAMP WITH TIME ZONE in DuckDB
    "ts": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "json": pa.string(),
}


READ_TYPES: dict[ColumnKind, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "ts": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "date": pa.string(),
}
"""How a value of each kind is read from JSON, before timestamps and dates are converted to
their `ARROW_TYPES` (json columns have no single reading: see `Column.items`)."""

TIMESTAMP_HINT: TColumnSchema = {"data_type": "timestamp", "timezone": True, "precision": 6}
"""dlt's hint for every timestamp column the source declares (`ARROW_TYPES["ts"]`), copied
into each column's hints (dlt writes into them)."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: ColumnKind
    items: ColumnKind | None = None
    """For a json column the spec gives as a list (`json[str]`): the kind of its items, which
    lets the fast path read it typed (`lines.py`). The column still holds the list's JSON text."""


def columns(spec: str) -> tuple[Column, ...]:
    """Parses 'name:kind ...' (a list column: 'name:json[str]'): a table in a few lines."""
    parsed = []
    for item in spec.split():
        name, kind = item.split(":")
        items = None
        if kind.endswith("]"):
            kind, items = kind[:-1].split("[")
        parsed.append(Column(name, kind, items))  # type: ignore[arg-type]
    return tuple(parsed)


@dataclass(frozen=True)
class Contract:
    """What one table's rows look like and which values the spec allows (a value outside the
    rules is recorded in `_sync_issues`, never dropped)."""

    table: str
    columns: tuple[Column, ...]
    history: bool = False
    """Rows carry `_row_hash` and `_sync_tombstone` (scd2 versions with retirement)."""
    flattened: frozenset[str] = frozenset()
    """Record fields the row builder replaces by other columns (`created_by` by its id)."""
    required: tuple[str, ...] = ()
    """Fields every record carries by the spec (creation requires them or the server sets
    them): a record without one is loaded and recorded."""
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    lengths: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Text lengths the spec allows, in characters, inclusive."""
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)


ISSUES = Contract(
    settings.ISSUES_TABLE,
    columns(
        "run_id:str table_name:str record_id:str field:str value:str problem:str workspace:str"
    ),
)
"""`_sync_issues`: one row per value that broke the contract, per run."""


def dlt_columns(contract: Contract) -> dict[str, TColumnSchema]:
    """dlt column hints for a table: types that Arrow alone does not say (json, tz precision)."""
    hints: dict[str, TColumnSchema] = {}
    for column in contract.columns:
        if column.kind == "json":
            hints[column.name] = {"data_type": "json", "nullable": True}
        elif column.kind == "ts":
            hints[column.name] = {**TIMESTAMP_HINT, "nullable": True}
        elif column.name == "id":
            hints[column.name] = {"data_type": "text", "nullable": False}
    return hints
