"""Say what a failed `model_checks` test found, in the failure's message.

A model's row checks are one dbt test per model, not one per column and kind (dbt's cost is
per node: docs/performance.md), but dbt's message for a failed test only counts rows. So a
failed one's compiled SQL runs once more through `dbt show` and its rows are added to the
message: `null in job_id (3 rows); not accepted in status (1 row); duplicated job_id (2
values)`. A build whose checks pass pays nothing for this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CHECKS_TEST = "model_checks"
SHOWN_ROWS = 50
"""At most this many broken checks are named (a model has fewer checks than this)."""
WORDS = {
    "not_null": ("null in", "row"),
    "accepted": ("not accepted in", "row"),
    "unique": ("duplicated", "value"),
    "grain": ("duplicated", "value"),
}
"""How the message names each kind of check the test returns, and what its count counts."""


def failed_check_tests(result: Any) -> dict[str, str]:
    """The compiled SQL of every failed `model_checks` test in dbt's run results, by unique
    id."""
    found: dict[str, str] = {}
    for node_result in getattr(result, "results", None) or []:
        node = node_result.node
        status = str(getattr(node_result.status, "value", node_result.status))
        metadata = getattr(node, "test_metadata", None)
        code = getattr(node, "compiled_code", None)
        if status == "fail" and metadata is not None and metadata.name == CHECKS_TEST and code:
            found[node.unique_id] = code
    return found


def broken_checks(dbt: Any, show_args: Sequence[str], tests: dict[str, str]) -> dict[str, str]:
    """What each failed test found, by unique id (`show_args`: the `dbt show` command line),
    the checks of one kind together in the order the test returns them. A test whose rows
    cannot be read keeps dbt's own message."""
    notes: dict[str, str] = {}
    for unique_id, sql in tests.items():
        # dbt show prints the rows it previews unless its log level is none
        query = ["--inline", sql, "--limit", str(SHOWN_ROWS), "--log-level", "none"]
        outcome = dbt.invoke([*show_args, *query])
        results = getattr(outcome.result, "results", None) or []
        table = getattr(results[0], "agate_table", None) if results else None
        if not outcome.success or table is None:
            continue
        kinds: dict[str, list[str]] = {}
        for check, column, count in table.rows:
            words, unit = WORDS.get(str(check), (str(check), "row"))
            kinds.setdefault(words, []).append(_count(str(column), int(count), unit))
        if kinds:
            notes[unique_id] = "; ".join(f"{words} {', '.join(at)}" for words, at in kinds.items())
    return notes


def _count(column: str, count: int, unit: str) -> str:
    return f"{column} ({count} {unit}{'' if count == 1 else 's'})"
