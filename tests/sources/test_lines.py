"""The fast path (records as JSON lines typed by Arrow) gives exactly the table of the
row-by-row path, and hands every batch it cannot type exactly to that path."""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drone_ops_sync.sources.drone_ops.tables.entities import (
    ENTITIES,
    JOBS,
    PROJECTS,
    WEBHOOKS_TABLE,
    Entity,
)
from drone_ops_sync.sources.drone_ops.tables.lines import (
    LineBuffer,
    list_json_text,
    record_lines,
    typed_lines,
)
from drone_ops_sync.sources.drone_ops.tables.rows import (
    Issue,
    line_hash,
    record_line,
    row_hash,
    typed_row_by_row,
)
from tests.sources.fake_api import job, project

from .test_transforms import API_KEY_CREATOR, PERSON

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from(["", "Tür — 検査", 'quote " and \\ back', "tab\there", "😀", "\u2028"])
MS = st.integers(min_value=-(2**43), max_value=2**43)


def both_paths(
    entity: Entity, records: list[dict[str, Any]], parent: str | None = None
) -> tuple[pa.Table | None, pa.Table, list[Issue], list[Issue]]:
    """(fast table or None, slow table, fast issues, slow issues) for one batch."""
    lines, versions = record_lines(records)
    fast_issues: list[Issue] = []
    fast = typed_lines(
        entity.contract,
        lines,
        versions=versions,
        run_id="r",
        issues=fast_issues,
        parent_column=entity.parent_column,
        parent_ids=[parent] * len(records),
    )
    assert entity.row is not None
    rows = [
        entity.row(r, version=v, parent_id=parent) for r, v in zip(records, versions, strict=True)
    ]
    slow_issues: list[Issue] = []
    slow = typed_row_by_row(entity.contract, rows, "r", slow_issues)
    return fast, slow, fast_issues, slow_issues


def assert_same(entity: Entity, records: list[dict[str, Any]], parent: str | None = None) -> None:
    fast, slow, fast_issues, slow_issues = both_paths(entity, records, parent)
    assert fast is not None, "well-typed records take the fast path"
    assert fast.schema == slow.schema
    for name in slow.column_names:
        assert fast.column(name).to_pylist() == slow.column(name).to_pylist(), name
    assert fast.equals(slow)
    assert fast_issues == slow_issues, "value breaches are reported alike"


def test_a_line_buffer_gives_back_each_line() -> None:
    lines = LineBuffer()
    for record in ({"a": 1}, {"b": "x\ny"}, {}):
        lines.append(orjson.dumps(record))
    assert len(lines) == 3
    assert [orjson.loads(line) for line in lines.lines()] == [{"a": 1}, {"b": "x\ny"}, {}]


def test_the_line_is_what_the_row_hash_is_made_of() -> None:
    record = job("j1", "p1", 1_700_000_000_000, capture_types=["b", "a"])
    assert line_hash(record_line(record)) == row_hash(record)
    assert record_line({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"c":3,"d":2},"b":1}'


@pytest.mark.parametrize("creator", [PERSON, API_KEY_CREATOR, None, {"id": None}, {}])
def test_projects_and_webhooks_flatten_their_creator_alike(creator: Any) -> None:
    assert_same(PROJECTS, [project("p1", 1_700_000_000_000, created_by=creator)])
    hook = {
        "id": "wh1",
        "name": "BI",
        "url": "https://hooks.example.com/x",
        "event_types": ["project.created", "project.updated"],
        "status": "active",
        "failure_count": 3,
        "created": 1_700_000_000_000,
        "updated": 1_700_000_000_001,
        "created_by": creator,
        "last_triggered_at": None,
    }
    assert_same(WEBHOOKS_TABLE, [hook])


def test_a_job_without_its_project_takes_the_one_it_was_listed_under() -> None:
    records = [job("j1", "p1", 1), {**job("j2", "p1", 2), "project_id": None}]
    assert_same(JOBS, records, parent="p9")


def test_value_breaches_are_reported_by_both_paths_alike() -> None:
    """Values of the right type outside the spec's rules are kept and reported either way."""
    records = [
        job("j1", "p1", 1, status="exploded", latitude=91.5, name=""),
        {k: v for k, v in job("j2", "p1", 2).items() if k != "type"},
    ]
    fast, _, issues, _ = both_paths(JOBS, records, "p1")
    assert fast is not None and len(issues) == 4
    assert_same(JOBS, records, "p1")


@pytest.mark.parametrize(
    "odd",
    [
        {"created": "yesterday"},
        {"created": 2.5},
        {"created": 2.0},  # accepted silently by the slow path, which gives the same table
        {"created": 2**63},
        {"created": 2**62},  # beyond what microseconds hold
        {"latitude": True},
        {"name": 7},
        {"start_date": "2026-2-1"},
        {"start_date": "yesterday"},
        {"capture_types": "thermal_inspection"},
        {"capture_types": [1, 2]},
        {"selected_days_of_week": [1.5]},
        {"unexpected_field": "x"},
        {"created_by": {"id": 42}},
    ],
)
def test_anything_the_reader_cannot_type_exactly_takes_the_reporting_path(
    odd: dict[str, Any],
) -> None:
    records = [job("ok", "p1", 1), {**job("odd", "p1", 2), **odd}]
    fast, slow, _, _ = both_paths(JOBS, records, "p1")
    assert fast is None
    assert slow.num_rows == 2


@pytest.mark.parametrize(
    "values",
    [
        [["a", "b"], [], None, ["x"]],
        [['quote "', "back \\"], ["ctl \x01"], ["tab\t"]],
        [["é", "😀", "\u2028"], ["/"]],
        [[None, "a"]],
    ],
)
def test_list_columns_hold_the_json_text_python_writes(values: list[Any]) -> None:
    array = pa.array(values, pa.list_(pa.string()))
    expected = [None if v is None else orjson.dumps(v).decode() for v in values]
    assert list_json_text(array).to_pylist() == expected


def test_integer_and_boolean_lists_hold_the_json_text_python_writes() -> None:
    ints = [[0, 6, -1], [], None, [2**62]]
    assert list_json_text(pa.array(ints, pa.list_(pa.int64()))).to_pylist() == [
        None if v is None else orjson.dumps(v).decode() for v in ints
    ]
    flags = [[True, False], None]
    assert list_json_text(pa.array(flags, pa.list_(pa.bool_()))).to_pylist() == [
        "[true,false]",
        None,
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": TEXT,
                "description": st.none() | TEXT,
                "status": st.sampled_from(["planned", "completed", "weird"]),
                "created": MS,
                "updated": MS,
                "latitude": st.none() | st.floats(-100, 100) | st.integers(-90, 90),
                "start_date": st.dates().map(lambda d: d.isoformat()),
                "capture_types": st.none() | st.lists(TEXT, max_size=3),
                "selected_days_of_week": st.none() | st.lists(st.integers(-3, 9), max_size=7),
                "recurring_interval": st.none() | st.integers(-(2**62), 2**62),
                "external_id": st.none() | TEXT,
            }
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_well_typed_job_batch_gives_the_row_by_row_table(fields: list[dict[str, Any]]) -> None:
    records = [{**job(f"j{n}", "p1", 1), **extra} for n, extra in enumerate(fields)]
    assert_same(JOBS, records, "p1")


def test_every_listed_entity_has_a_fast_path() -> None:
    """Each table built from listed records can be read from lines (no column without a type)."""
    for entity in ENTITIES.values():
        if entity.row is None:
            continue
        for column in entity.contract.columns:
            assert column.kind != "json" or column.items is not None, (entity.table, column)
