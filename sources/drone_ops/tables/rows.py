"""Pure record transforms: API JSON records in, warehouse rows and Arrow tables out.

Nothing here does I/O or knows which tables exist: each function is given the table's
`Contract` (`entities.py`). This is the typing's row-by-row path, reached only through
`lines.typed_batch` when the fast reader declines a batch: it keeps the record, nulls a broken
value and reports it.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .. import settings
from .breaches import Issue, new_issue, record_breaches
from .schema import ARROW_TYPES, ISSUES, READ_TYPES, Column, Contract

Record = dict[str, Any]
RowBuilder = Callable[..., Record]
"""Called as `builder(record, version=..., parent_id=...)`: `version` is the record's row hash
when the caller computed it already, `parent_id` the id of the record it was listed under."""
MAX_INT64 = 2**63 - 1
# Timestamps are stored in microseconds: the largest millisecond value that still fits.
MAX_TIMESTAMP_MS = MAX_INT64 // 1000
# Columns of a delivery row read from its request payload (the rest come from the log entry),
# each with the payload field it is read from.
PAYLOAD_COLUMNS: dict[str, str] = {
    "delivery_id": "delivery_id",
    "event": "event",
    "event_timestamp": "timestamp",
    "workspace_id": "workspace_id",
    "data": "data",
}


def record_line(record: Mapping[str, Any]) -> bytes:
    """The record as one JSON line with sorted keys (at every level): what its row hash is
    made of, and what the fast path types (`lines.py`)."""
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


def line_hash(line: bytes) -> str:
    """The row hash of a record given as its `record_line`."""
    return hashlib.blake2b(line, digest_size=16).hexdigest()


def row_hash(record: Mapping[str, Any]) -> str:
    """A stable fingerprint of everything the API said about an entity."""
    return line_hash(record_line(record))


def entity_row(
    record: Mapping[str, Any], version: str | None = None, parent_id: str | None = None
) -> Record:
    """A row of a table whose records need no reshaping (team members, job types), and what
    the other builders start from: the record with its row hash (`version`, if known)."""
    row = dict(record)
    row[settings.ROW_HASH_COLUMN] = version or row_hash(record)
    return row


def creator_flattened_row(
    record: Mapping[str, Any], *, version: str | None = None, parent_id: str | None = None
) -> Record:
    """The row builder of projects and webhooks: the nested `created_by` object becomes
    `created_by_id` (the walk gathers the creators themselves: `walk/creators.py`)."""
    row = entity_row(record, version)
    creator = row.pop("created_by", None)
    creator_id = creator.get("id") if isinstance(creator, dict) else None
    row["created_by_id"] = str(creator_id) if creator_id is not None else None
    return row


def job_row(
    record: Mapping[str, Any], parent_id: str | None = None, version: str | None = None
) -> Record:
    """A jobs row; the owning project (`parent_id`) comes from the walk if the record lacks it."""
    row = entity_row(record, version)
    if row.get("project_id") is None:
        row["project_id"] = parent_id
    return row


def built_row(
    record: Mapping[str, Any], version: str | None = None, parent_id: str | None = None
) -> Record:
    """The row builder of a table whose records are built as rows already (users:
    `user_row`, which carries its own row hash)."""
    return dict(record)


def delivery_row(record: Mapping[str, Any], webhook_id: str) -> Record:
    """A webhook_deliveries row with its request payload parsed into columns."""
    row = dict(record)
    row["webhook_id"] = webhook_id
    payload_text = row.get("request_payload")
    payload: Any = None
    if isinstance(payload_text, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            payload = orjson.loads(payload_text)
    fields = payload if isinstance(payload, dict) else {}
    for column, key in PAYLOAD_COLUMNS.items():
        row[column] = fields.get(key)
    return row


def user_row(creator: Mapping[str, Any], first_ms: int | None, last_ms: int | None) -> Record:
    """A users row from a `created_by` object of either shape (a person or an API key);
    `first_ms`/`last_ms` span what it created that the API shows, so it changes only with it."""
    kind = creator.get("type")
    if not kind:
        kind = "user" if "email" in creator else "unknown"
    first, last = creator.get("first_name"), creator.get("last_name")
    names = " ".join(str(part) for part in (first, last) if part)
    row: Record = {
        "id": str(creator["id"]),
        "kind": str(kind),
        "email": creator.get("email"),
        "first_name": first,
        "last_name": last,
        "profile_picture": creator.get("profile_picture"),
        "display_name": names or creator.get("name") or creator.get("email"),
        "first_seen_at": first_ms,
        "last_seen_at": last_ms,
    }
    row[settings.ROW_HASH_COLUMN] = row_hash(row)
    return row


def typed_row_by_row(
    contract: Contract, rows: Sequence[Record], run_id: str, issues: list[Issue]
) -> pa.Table:
    """The typed Arrow table of a batch of built rows; appends every contract breach to
    `issues`. The fallback of `lines.typed_batch`, the one typing path: call that instead."""
    table, declared = contract.table, contract.columns
    reported_before = len(issues)
    arrays = well_typed_arrays(declared, rows)
    if arrays is None:
        # some value breaks its column's type: type column by column, reporting each breach
        arrays = {}
        for column in declared:
            name = column.name
            values = [row.get(name) for row in rows]
            arrays[name] = _column_array(table, column, values, rows, run_id, issues)
    if contract.history:
        arrays[settings.ROW_HASH_COLUMN] = pa.array(
            [row[settings.ROW_HASH_COLUMN] for row in rows], pa.string()
        )
        arrays[settings.TOMBSTONE_COLUMN] = pa.array([False] * len(rows), pa.bool_())
    known = {column.name for column in declared} | {settings.ROW_HASH_COLUMN}
    known |= contract.flattened
    extra = sorted(set().union(*(row.keys() for row in rows)) - known) if rows else []
    for name in extra:
        arrays[name] = _inferred_array([row.get(name) for row in rows])
    built = pa.table(arrays)
    breaches = {(issue["record_id"], issue["field"]) for issue in issues[reported_before:]}
    record_breaches(contract, built, run_id, issues, breaches)
    return with_required_fields(built)


_CONVERTIBLE = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


def well_typed_arrays(
    declared: Sequence[Column], rows: Sequence[Record]
) -> dict[str, pa.Array] | None:
    """All declared columns at C speed, or None when any value breaks its type: `from_pylist`
    refuses most breaches, and two small passes catch the two it lets through (2.7 truncated
    into an integer column, True taken as 1.0 in a float column)."""
    plain = [c for c in declared if c.kind != "json"]
    try:
        typed = pa.Table.from_pylist(
            list(rows), schema=pa.schema([(c.name, READ_TYPES[c.kind]) for c in plain])
        )
        integers = [c.name for c in plain if c.kind in ("int", "ts")]
        if integers:
            exact = pa.Table.from_pylist(
                list(rows), schema=pa.schema([(name, pa.float64()) for name in integers])
            )
            for name in integers:
                as_float = typed.column(name).cast(pa.float64())
                if pc.all(pc.equal(as_float, exact.column(name))).as_py() not in (True, None):
                    return None
        floats = [c.name for c in plain if c.kind == "float"]
        if floats:
            # booleans are the only values an int64 reading rejects that float64 accepted
            pa.Table.from_pylist(
                list(rows), schema=pa.schema([(name, pa.int64()) for name in floats])
            )
        arrays: dict[str, pa.Array] = {}
        for column in declared:
            if column.kind == "json":
                arrays[column.name] = _fast_array(column, [row.get(column.name) for row in rows])
                continue
            values = typed.column(column.name).combine_chunks()
            if column.kind == "ts":
                values = values.cast(pa.timestamp("ms", tz="UTC")).cast(ARROW_TYPES["ts"])
            elif column.kind == "date":
                values = values.cast(pa.date32())
            arrays[column.name] = values
        return arrays
    except _CONVERTIBLE:
        return None


def with_required_fields(built: pa.Table) -> pa.Table:
    """Marks `id` and `_row_hash` non-nullable, as the dlt schema declares them."""
    fields = [
        field.with_nullable(False)
        if field.name in ("id", settings.ROW_HASH_COLUMN)
        and built.column(field.name).null_count == 0
        else field
        for field in built.schema
    ]
    return built.cast(pa.schema(fields))


def _column_array(
    table: str,
    column: Column,
    values: list[Any],
    rows: Sequence[Record],
    run_id: str,
    issues: list[Issue],
) -> pa.Array:
    try:
        return _fast_array(column, values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    coerced: list[Any] = []
    for row, value in zip(rows, values, strict=True):
        converted, problem = _coerce(column, value)
        if problem:
            issues.append(new_issue(run_id, table, row.get("id"), column.name, value, problem))
        coerced.append(converted)
    return _fast_array(column, coerced)


# Python types each column kind takes on the fast path; anything else goes the slow way.
_FAST_TYPES: dict[str, frozenset[type]] = {
    "str": frozenset({str, type(None)}),
    "int": frozenset({int, type(None)}),
    "ts": frozenset({int, type(None)}),
    "float": frozenset({float, int, type(None)}),
    "bool": frozenset({bool, type(None)}),
    "date": frozenset({str, type(None)}),
}


def _fast_array(column: Column, values: list[Any]) -> pa.Array:
    kind = column.kind
    allowed = _FAST_TYPES.get(kind)
    # one C-speed pass over the types; bool is its own type here, so True never passes as 1
    # and 2.7 never reaches an integer column (Arrow would truncate it)
    if allowed is not None and not allowed.issuperset(set(map(type, values))):
        raise TypeError(f"not all values are of the {kind} kind")
    if kind == "ts":
        millis = pa.array(values, pa.int64())
        return millis.cast(pa.timestamp("ms", tz="UTC")).cast(ARROW_TYPES["ts"])
    if kind == "date":
        return pa.array(values, pa.string()).cast(pa.date32())
    if kind == "json":
        dumps = orjson.dumps
        return pa.array([None if v is None else dumps(v).decode() for v in values], pa.string())
    return pa.array(values, ARROW_TYPES[kind])


def _coerce(column: Column, value: Any) -> tuple[Any, str | None]:
    """One value to the column's kind: (value, None), or (best effort, what was wrong)."""
    if value is None:
        return None, None
    kind = column.kind
    if kind == "str":
        if isinstance(value, str):
            return value, None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value), f"expected a string, got a number; kept as text {value!s}"
        return orjson.dumps(value).decode(), "expected a string; kept as JSON text"
    if kind in ("int", "ts"):
        what = "milliseconds timestamp" if kind == "ts" else "integer"
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(value, float) and value.is_integer():
            number = int(value)
        if number is None:
            return None, f"expected an {what}; value not loaded into this column"
        limit = MAX_TIMESTAMP_MS if kind == "ts" else MAX_INT64
        if not -limit <= number <= limit:
            return None, f"{what} out of range; value not loaded into this column"
        return number, None
    if kind == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), None
        return None, "expected a number; value not loaded into this column"
    if kind == "bool":
        if isinstance(value, bool):
            return value, None
        return None, "expected a boolean; value not loaded into this column"
    if kind == "date":
        if isinstance(value, str):
            try:
                return date.fromisoformat(value).isoformat(), None
            except ValueError:
                pass
        return None, "expected an ISO 8601 date (YYYY-MM-DD); value not loaded into this column"
    return value, None


def _inferred_array(values: list[Any]) -> pa.Array:
    """A column the spec does not know is text, whatever one batch holds: a string as it is,
    any other value as its JSON text. Inferring a type per batch would make the same field an
    integer in one load and JSON-quoted text (`"eu-west"`) in the next."""
    return pa.array(
        [v if v is None or isinstance(v, str) else orjson.dumps(v).decode() for v in values],
        pa.string(),
    )


def issue_table(issues: Iterable[Issue]) -> pa.Table:
    """The `_sync_issues` rows of a run as one Arrow table."""
    rows = list(issues)
    return pa.table(
        {
            column.name: pa.array([row.get(column.name) for row in rows], pa.string())
            for column in ISSUES.columns
        }
    )
