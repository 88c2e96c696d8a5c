"""Say which columns a failed `not_null_columns` test found null, in the failure's message.

The not-null checks are one dbt test per model, not per column (dbt's cost is per node:
docs/performance.md), but dbt's message for a failed test only counts rows. So a failed one's
compiled SQL runs once more through `dbt show` and its rows are added to the message:
`null in job_id (3 rows)`. A build whose checks pass pays nothing for this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NOT_NULL_TEST = "not_null_columns"
SHOWN_ROWS = 50
"""At most this many failing columns are named (a model has fewer columns than this)."""


def failed_not_null_tests(result: Any) -> dict[str, str]:
    """The compiled SQL of every failed `not_null_columns` test in dbt's run results, by
    unique id."""
    found: dict[str, str] = {}
    for node_result in getattr(result, "results", None) or []:
        node = node_result.node
        status = str(getattr(node_result.status, "value", node_result.status))
        metadata = getattr(node, "test_metadata", None)
        code = getattr(node, "compiled_code", None)
        if status == "fail" and metadata is not None and metadata.name == NOT_NULL_TEST and code:
            found[node.unique_id] = code
    return found


def null_columns(dbt: Any, show_args: Sequence[str], tests: dict[str, str]) -> dict[str, str]:
    """`null in <column> (<n> rows), ...` for each failed test, by unique id (`show_args`: the
    `dbt show` command line). A test whose rows cannot be read keeps dbt's own message."""
    notes: dict[str, str] = {}
    for unique_id, sql in tests.items():
        # dbt show prints the rows it previews unless its log level is none
        query = ["--inline", sql, "--limit", str(SHOWN_ROWS), "--log-level", "none"]
        outcome = dbt.invoke([*show_args, *query])
        results = getattr(outcome.result, "results", None) or []
        table = getattr(results[0], "agate_table", None) if results else None
        if not outcome.success or table is None:
            continue
        found = [_count(str(row[0]), int(row[1])) for row in table.rows]
        if found:
            notes[unique_id] = "null in " + ", ".join(found)
    return notes


def _count(column: str, rows: int) -> str:
    return f"{column} ({rows} row{'' if rows == 1 else 's'})"
