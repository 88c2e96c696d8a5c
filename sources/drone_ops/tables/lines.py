"""The fast path from API records to typed Arrow: records as JSON lines, read by Arrow.

Why: typing a batch from Python dicts holds the GIL for every value, and while a walk thread
holds it no other thread can send the next request (docs/performance.md). So the walk keeps
each record as one JSON line (for entities the sorted-key serialization its row hash is made
of, so the line costs nothing extra), typed by Arrow's JSON reader against a schema derived
from the table's contract, outside the GIL, with no Python object per row.

The reader is strict: any value it would have to bend makes the batch take the row-by-row
path (`rows.typed_row_by_row`), which reports each breach; for well-typed input both give the
same table. `typed_batch` is the one call that types rows, whoever produced them, so a value is
typed and a breach reported the same way wherever the record came from. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from .. import settings
from .breaches import Issue, record_breaches
from .rows import (
    MAX_TIMESTAMP_MS,
    RowBuilder,
    line_hash,
    record_line,
    typed_row_by_row,
    with_required_fields,
)
from .schema import ARROW_TYPES, READ_TYPES, Column, Contract

# The objects a row builder flattens to their id (`rows.creator_flattened_row`): a person or an API
# key, every field optional; `<name>_id` is the column it becomes.
FLATTENED_SHAPES: dict[str, pa.DataType] = {
    "created_by": pa.struct(
        [
            (name, pa.string())
            for name in ("id", "email", "first_name", "last_name", "profile_picture", "type")
        ]
        + [("name", pa.string())]
    ),
}
_NEEDS_ESCAPING = r'[\x00-\x1f"\\]'
"""Characters a JSON string escapes: list items holding one are written by Python instead."""
_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError)


class LineBuffer:
    """JSON lines in one compact buffer, which Arrow's reader takes as it is (each separate
    `orjson.dumps` result keeps an allocation far larger than a short line)."""

    __slots__ = ("count", "data")

    def __init__(self) -> None:
        self.data = bytearray()
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, line: bytes) -> None:
        self.data += line
        self.data += b"\n"
        self.count += 1

    def lines(self) -> list[bytes]:
        """Each line on its own (the reporting path parses them one by one)."""
        return bytes(self.data).split(b"\n")[: self.count]


def read_lines(columns: Sequence[Column], lines: LineBuffer) -> dict[str, pa.Array] | None:
    """The declared columns of JSON-line records, typed as the contract says; None when any
    value (or an unknown field) would need the reporting path."""
    read = _read(tuple(columns), (), lines)
    return None if read is None else _converted(columns, read)


def typed_lines(
    contract: Contract,
    lines: LineBuffer,
    *,
    versions: Sequence[str],
    run_id: str,
    issues: list[Issue],
    parent_column: str | None = None,
    parent_ids: Sequence[str | None] | None = None,
) -> pa.Table | None:
    """An entity table's typed batch from its records' lines, as `rows.typed_row_by_row` would
    build it from the row builders' rows; None when the batch must take that path instead.

    `versions` are the records' row hashes (in line order), `parent_ids` the id each record was
    listed under, filling `parent_column` where the record lacks it (a job's project)."""
    flattened = tuple(sorted(contract.flattened))
    derived = {f"{name}_id" for name in flattened}
    read_columns = tuple(c for c in contract.columns if c.name not in derived)
    read = _read(read_columns, flattened, lines)
    if read is None:
        return None
    arrays = _converted(read_columns, read)
    if arrays is None:
        return None
    for name in flattened:
        creator = read.column(name).combine_chunks()
        arrays[f"{name}_id"] = pc.struct_field(creator, "id")
    if parent_column is not None and parent_ids:
        listed_under = pa.array(parent_ids, pa.string())
        arrays[parent_column] = pc.coalesce(arrays[parent_column], listed_under)
    columns = {c.name: arrays[c.name] for c in contract.columns}
    if contract.history:
        columns[settings.ROW_HASH_COLUMN] = pa.array(versions, pa.string())
        columns[settings.TOMBSTONE_COLUMN] = pa.array([False] * lines.count, pa.bool_())
    built = pa.table(columns)
    record_breaches(contract, built, run_id, issues, set())
    return with_required_fields(built)


def typed_batch(
    contract: Contract,
    lines: LineBuffer,
    *,
    run_id: str,
    issues: list[Issue],
    row: RowBuilder,
    versions: Sequence[str] = (),
    parent_column: str | None = None,
    parent_ids: Sequence[str | None] = (),
    read: Callable[[], pa.Table | None] | None = None,
) -> pa.Table:
    """A batch of records, given as their lines (with their row hashes and parents, when the
    table has them), typed once: by the fast reader (`typed_lines`, or `read` for deliveries'
    payloads), or, when it declines, row by row (`rows.typed_row_by_row`), which reports each
    breach into `issues`."""
    if read is None:
        fast = typed_lines(
            contract,
            lines,
            versions=versions,
            run_id=run_id,
            issues=issues,
            parent_column=parent_column,
            parent_ids=parent_ids,
        )
    else:
        fast = read()
    if fast is not None:
        return fast
    rows = [
        row(
            orjson.loads(line),
            version=versions[n] if versions else None,
            parent_id=parent_ids[n] if parent_ids else None,
        )
        for n, line in enumerate(lines.lines())
    ]
    return typed_row_by_row(contract, rows, run_id, issues)


def typed_records(
    contract: Contract,
    records: Iterable[Mapping[str, object]],
    *,
    run_id: str,
    issues: list[Issue],
    row: RowBuilder,
) -> pa.Table:
    """Records that did not come as a listed page (fetched by id, received in an event, made
    from creators) typed as a page is: their canonical lines through `typed_batch`."""
    lines, versions = record_lines(records)
    return typed_batch(contract, lines, run_id=run_id, issues=issues, row=row, versions=versions)


def record_lines(records: Iterable[Mapping[str, object]]) -> tuple[LineBuffer, list[str]]:
    """Records as their canonical lines, with each line's row hash."""
    lines = LineBuffer()
    versions = []
    for record in records:
        line = record_line(record)
        lines.append(line)
        versions.append(line_hash(line))
    return lines, versions


@cache
def _read_schema(columns: tuple[Column, ...], flattened: tuple[str, ...]) -> pa.Schema | None:
    fields = []
    for column in columns:
        if column.kind == "json":
            if column.items is None or column.items not in READ_TYPES:
                return None
            fields.append(pa.field(column.name, pa.list_(READ_TYPES[column.items])))
        else:
            fields.append(pa.field(column.name, READ_TYPES[column.kind]))
    for name in flattened:
        if name not in FLATTENED_SHAPES:
            return None
        fields.append(pa.field(name, FLATTENED_SHAPES[name]))
    return pa.schema(fields)


def _read(
    columns: tuple[Column, ...], flattened: tuple[str, ...], lines: LineBuffer
) -> pa.Table | None:
    """Arrow's JSON reader over the lines, in one block, strict about types and fields; None
    when it declines them, or the columns have no strict reading (`_read_schema`)."""
    schema = _read_schema(columns, flattened)
    if schema is None or not lines.count:
        return None
    try:
        read = pa_json.read_json(
            pa.BufferReader(pa.py_buffer(lines.data)),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(lines.data) + 1),
            parse_options=pa_json.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="error"
            ),
        )
    except _ERRORS:
        return None
    return read if read.num_rows == lines.count else None


def _converted(columns: Sequence[Column], read: pa.Table) -> dict[str, pa.Array] | None:
    """Read values to the warehouse's types: timestamps, dates and list JSON text."""
    arrays: dict[str, pa.Array] = {}
    try:
        for column in columns:
            values = read.column(column.name).combine_chunks()
            if column.kind == "ts":
                bounds = pc.min_max(values).as_py()
                if bounds["min"] is not None and (
                    bounds["min"] < -MAX_TIMESTAMP_MS or bounds["max"] > MAX_TIMESTAMP_MS
                ):
                    return None
                values = values.cast(pa.timestamp("ms", tz="UTC")).cast(ARROW_TYPES["ts"])
            elif column.kind == "date":
                values = values.cast(pa.date32())
            elif column.kind == "json":
                values = list_json_text(values)
            arrays[column.name] = values
    except _ERRORS:
        return None
    return arrays


def list_json_text(values: pa.ListArray) -> pa.Array:
    """Each list as the JSON text `orjson.dumps` writes for it (None stays null), built in
    Arrow; lists whose items need escaping or hold nulls are written by Python."""
    items = values.values
    kind = items.type
    if items.null_count or (
        pa.types.is_string(kind)
        and pc.any(pc.match_substring_regex(items, _NEEDS_ESCAPING)).as_py()
    ):
        return _json_text_by_python(values)
    if pa.types.is_string(kind):
        written = pc.binary_join_element_wise('"', items, '"', "")
    elif pa.types.is_integer(kind):
        written = items.cast(pa.string())
    elif pa.types.is_boolean(kind):
        written = pc.if_else(items, "true", "false")
    else:
        # floats: Arrow's shortest form is not always Python's
        return _json_text_by_python(values)
    lists = pa.ListArray.from_arrays(values.offsets, written, mask=values.is_null())
    return pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")


def _json_text_by_python(values: pa.ListArray) -> pa.Array:
    return pa.array(
        [None if v is None else orjson.dumps(v).decode() for v in values.to_pylist()], pa.string()
    )
