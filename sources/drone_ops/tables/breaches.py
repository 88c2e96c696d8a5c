"""The spec's rules for values, checked after typing: a breach is recorded, never dropped.

Each breach becomes one `_sync_issues` row (run, table, record, field, value, problem), so a
data team sees what the API sent that the spec does not allow without losing the record.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .schema import Contract

Issue = dict[str, str | None]


def record_breaches(
    contract: Contract,
    built: pa.Table,
    run_id: str,
    issues: list[Issue],
    breaches: set[tuple[str | None, str | None]],
) -> None:
    """Records (does not drop) values outside the spec's sets and ranges, and required fields
    missing or null (unless already reported as a type breach: `breaches`)."""
    table = contract.table
    ids = built.column("id")
    for name in contract.required:
        values = built.column(name)
        if not values.null_count:
            continue
        for record_id, value in zip(ids.to_pylist(), values.to_pylist(), strict=True):
            key = None if record_id is None else str(record_id)
            if value is None and (key, name) not in breaches:
                issues.append(
                    new_issue(run_id, table, record_id, name, None, "required but missing")
                )
    for name, allowed in contract.enums.items():
        values = built.column(name)
        bad = pc.and_(pc.is_valid(values), pc.invert(pc.is_in(values, pa.array(allowed))))
        _report(table, name, ids, values, bad, f"not one of {', '.join(allowed)}", run_id, issues)
    for name, (shortest, longest) in contract.lengths.items():
        values = built.column(name)
        lengths = pc.utf8_length(values)
        bad = pc.or_(pc.less(lengths, shortest), pc.greater(lengths, longest))
        _report(
            table, name, ids, values, bad, f"length outside {shortest} to {longest}", run_id, issues
        )
    for name, (low, high) in contract.ranges.items():
        values = built.column(name)
        bad = pc.or_(pc.less(values, low), pc.greater(values, high))
        _report(table, name, ids, values, bad, f"outside {low:g} to {high:g}", run_id, issues)


def _report(
    table: str,
    field: str,
    ids: pa.ChunkedArray,
    values: pa.ChunkedArray,
    bad: pa.ChunkedArray,
    problem: str,
    run_id: str,
    issues: list[Issue],
) -> None:
    mask = bad.fill_null(False)
    if not pc.any(mask).as_py():
        return
    for record_id, value in zip(
        ids.filter(mask).to_pylist(), values.filter(mask).to_pylist(), strict=True
    ):
        issues.append(new_issue(run_id, table, record_id, field, value, problem))


def new_issue(
    run_id: str, table: str, record_id: Any, field: str, value: Any, problem: str
) -> Issue:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return {
        "run_id": run_id,
        "table_name": table,
        "record_id": None if record_id is None else str(record_id),
        "field": field,
        "value": text[:1000],
        "problem": problem,
    }
