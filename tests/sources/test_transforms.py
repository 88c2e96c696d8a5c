"""Unit tests of the pure record transforms: typing, the data contract, hashes, creators."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import orjson
import pyarrow as pa
import pytest

from drone_ops_sync.sources.drone_ops.compare.deletions import tombstones
from drone_ops_sync.sources.drone_ops.internal import settings
from drone_ops_sync.sources.drone_ops.tables.entities import (
    ENTITIES,
    TABLE_COLUMNS,
    USERS,
)
from drone_ops_sync.sources.drone_ops.tables.lines import LineBuffer, typed_records
from drone_ops_sync.sources.drone_ops.tables.payloads import _delivery_table_fast, delivery_table
from drone_ops_sync.sources.drone_ops.tables.rows import (
    Issue,
    built_row,
    creator_flattened_row,
    delivery_row,
    entity_row,
    issue_table,
    job_row,
    row_hash,
    typed_row_by_row,
    user_row,
)
from drone_ops_sync.sources.drone_ops.tables.schema import ISSUES
from tests.sources.fake_api import FakeApi, job, project

RUN = "run-1"
DELIVERIES = ENTITIES["webhook_deliveries"].contract
PERSON = {
    "id": "u1",
    "email": "ana@example.com",
    "first_name": "Ana",
    "last_name": "Lima",
    "profile_picture": None,
}
API_KEY_CREATOR = {"id": "apikey_1", "type": "api_key", "name": "CI"}


def typed(table: str, records: list[dict[str, Any]], issues: list[Issue]) -> pa.Table:
    """Records typed by the one typing path (`typed_records`), as a walk types them."""
    entity = ENTITIES[table]
    return typed_records(
        entity.contract, records, run_id=RUN, issues=issues, row=entity.row or built_row
    )


def _jobs_table(*records: dict[str, Any]) -> tuple[pa.Table, list[Issue]]:
    issues: list[Issue] = []
    return typed("jobs", list(records), issues), issues


def _issues_for(issues: list[Issue], field: str) -> list[Issue]:
    return [i for i in issues if i["field"] == field]


# --- timestamps and dates ---------------------------------------------------------------------


def test_ms_timestamp_converts_exactly_to_utc_microseconds() -> None:
    """API milliseconds become a UTC µs timestamp with no precision lost."""
    issues: list[Issue] = []
    table = typed("projects", [project("p1", 1_700_000_000_123, updated=1_700_000_000_999)], issues)
    created = table.column("created")
    assert created.type == pa.timestamp("us", tz="UTC")
    assert created.cast(pa.int64()).to_pylist() == [1_700_000_000_123_000]
    assert created.to_pylist()[0] == datetime(2023, 11, 14, 22, 13, 20, 123_000, tzinfo=UTC)
    assert table.column("updated").cast(pa.int64()).to_pylist() == [1_700_000_000_999_000]
    assert issues == []


def test_dates_become_date32() -> None:
    """`start_date`/`end_date` strings become Arrow date32 values; null stays null."""
    table = typed("projects", [project("p1", 1, start_date="2026-01-31", end_date=None)], [])
    assert table.column("start_date").type == pa.date32()
    assert table.column("start_date").to_pylist() == [date(2026, 1, 31)]
    assert table.column("end_date").to_pylist() == [None]


# --- the slow path: bad values are nulled (or kept as text) and reported ----------------------


def test_invalid_date_is_nulled_and_reported_record_kept() -> None:
    """An impossible date nulls only that value; the record and its other values stay."""
    table, issues = _jobs_table(
        job("j1", "p1", 1, start_date="2026-02-30"), job("j2", "p1", 2, start_date="2026-03-01")
    )
    assert table.column("id").to_pylist() == ["j1", "j2"]
    assert table.column("start_date").to_pylist() == [None, date(2026, 3, 1)]
    assert table.column("name").to_pylist() == ["Job j1", "Job j2"]
    [issue] = _issues_for(issues, "start_date")
    assert issue["table_name"] == "jobs"
    assert issue["record_id"] == "j1"
    assert issue["value"] == "2026-02-30"
    assert issue["run_id"] == RUN
    assert "date" in (issue["problem"] or "")


def test_string_timestamp_is_nulled_and_reported() -> None:
    """A timestamp sent as a string is not guessed at: null plus an issue naming the field."""
    table, issues = _jobs_table(job("j1", "p1", 1, updated="1700000000000"), job("j2", "p1", 5))
    assert table.num_rows == 2
    assert table.column("updated").to_pylist()[0] is None
    assert table.column("updated").cast(pa.int64()).to_pylist()[1] == 5_000
    [issue] = _issues_for(issues, "updated")
    assert (issue["table_name"], issue["record_id"]) == ("jobs", "j1")
    assert "timestamp" in (issue["problem"] or "")


def test_bool_in_int_column_is_nulled_and_reported() -> None:
    """`true` in an integer column is not loaded as 1."""
    table, issues = _jobs_table(
        job("j1", "p1", 1, flights_per_occurrence=True),
        job("j2", "p1", 2, flights_per_occurrence=3),
    )
    assert table.column("flights_per_occurrence").to_pylist() == [None, 3]
    [issue] = _issues_for(issues, "flights_per_occurrence")
    assert issue["record_id"] == "j1"
    assert issue["value"] == "true"
    assert "integer" in (issue["problem"] or "")


def test_bool_in_timestamp_column_is_nulled_and_reported() -> None:
    """`true` in a timestamp column is not loaded as 1 ms after the epoch."""
    table, issues = _jobs_table(job("j1", "p1", True))
    assert table.column("created").to_pylist() == [None]
    assert [i["record_id"] for i in _issues_for(issues, "created")] == ["j1"]


def test_number_in_string_column_is_kept_as_text_and_reported() -> None:
    """A number where a string belongs is kept as its text, and reported."""
    table, issues = _jobs_table(job("j1", "p1", 1, name=42), job("j2", "p1", 2))
    assert table.column("name").type == pa.string()
    assert table.column("name").to_pylist() == ["42", "Job j2"]
    [issue] = _issues_for(issues, "name")
    assert (issue["record_id"], issue["value"]) == ("j1", "42")


def test_object_in_string_column_is_kept_as_json_text() -> None:
    """A nested value where a string belongs is kept as JSON text, and reported."""
    table, issues = _jobs_table(job("j1", "p1", 1, description={"a": [1]}))
    assert json.loads(table.column("description").to_pylist()[0]) == {"a": [1]}
    assert len(_issues_for(issues, "description")) == 1


def test_string_in_float_column_is_nulled_and_reported() -> None:
    """A latitude sent as a string is nulled, not parsed."""
    table, issues = _jobs_table(job("j1", "p1", 1, latitude="52.1"))
    assert table.column("latitude").to_pylist() == [None]
    assert table.column("longitude").to_pylist() == [4.3]
    assert [i["record_id"] for i in _issues_for(issues, "latitude")] == ["j1"]


def test_integral_float_in_int_column_is_accepted_silently() -> None:
    """3.0 is an integer in JSON terms: loaded as 3, no issue."""
    table, issues = _jobs_table(job("j1", "p1", 1, flights_per_occurrence=3.0))
    assert table.column("flights_per_occurrence").to_pylist() == [3]
    assert _issues_for(issues, "flights_per_occurrence") == []


def test_fractional_float_in_int_column_is_reported() -> None:
    """A fractional number in an integer column must not be silently truncated."""
    table, issues = _jobs_table(job("j1", "p1", 1, flights_per_occurrence=2.7))
    assert table.column("flights_per_occurrence").to_pylist() != [2]
    assert len(_issues_for(issues, "flights_per_occurrence")) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("flights_per_occurrence", 2**63 + 5), ("created", 10**17)],
    ids=["int-beyond-int64", "ms-beyond-us-range"],
)
def test_out_of_range_number_is_nulled_not_crashing(field: str, value: int) -> None:
    """A number the column type cannot hold is nulled and reported; the batch survives."""
    table, issues = _jobs_table({**job("j1", "p1", 1), field: value}, job("j2", "p1", 2))
    assert table.num_rows == 2
    assert table.column(field).to_pylist()[0] is None
    assert [i["record_id"] for i in _issues_for(issues, field)] == ["j1"]


# --- range and enum checks keep the value -----------------------------------------------------


def test_out_of_range_latitude_is_kept_and_reported() -> None:
    """A latitude outside -90..90 is loaded as given and reported, not dropped."""
    table, issues = _jobs_table(job("j1", "p1", 1, latitude=95.5), job("j2", "p1", 2))
    assert table.column("latitude").to_pylist() == [95.5, 52.1]
    [issue] = _issues_for(issues, "latitude")
    assert (issue["table_name"], issue["record_id"], issue["value"]) == ("jobs", "j1", "95.5")
    assert "-90" in (issue["problem"] or "") and "90" in (issue["problem"] or "")


def test_unknown_status_is_kept_and_reported() -> None:
    """A status outside the spec's set is loaded as given and reported."""
    issues: list[Issue] = []
    table = typed("projects", [project("p1", 1, status="exploded"), project("p2", 2)], issues)
    assert table.column("status").to_pylist() == ["exploded", "planned"]
    [issue] = _issues_for(issues, "status")
    assert (issue["table_name"], issue["record_id"], issue["value"]) == (
        "projects",
        "p1",
        "exploded",
    )
    assert "planned" in (issue["problem"] or "")


def test_valid_records_report_nothing() -> None:
    """The fake API's own records satisfy the contract: no issue at all."""
    api = FakeApi.small()
    _, issues = _jobs_table(*api.jobs.values())
    assert issues == []


# --- unknown fields and JSON columns -----------------------------------------------------------


def test_unknown_fields_become_text_columns() -> None:
    """Fields the spec does not know are loaded as text: strings as they are, other values as
    their JSON text, so the column's type never depends on what one batch held."""
    table, issues = _jobs_table(
        job("j1", "p1", 1, wind_kph=12, gusty=True, pilot_note="calm", extras={"a": [1, 2]}),
        job("j2", "p1", 2, wind_kph=None, gusty=False, pilot_note=None, extras=[3]),
    )
    assert {table.column(name).type for name in ("wind_kph", "gusty", "extras")} == {pa.string()}
    assert table.column("wind_kph").to_pylist() == ["12", None]
    assert table.column("gusty").to_pylist() == ["true", "false"]
    assert table.column("pilot_note").to_pylist() == ["calm", None]
    assert [json.loads(v) for v in table.column("extras").to_pylist()] == [{"a": [1, 2]}, [3]]
    assert issues == []


def test_an_unknown_field_holds_the_same_text_whatever_else_its_batch_holds() -> None:
    """A string is never JSON-quoted, whether its batch also held numbers or not."""
    mixed, _ = _jobs_table(job("j1", "p1", 1, region=7), job("j2", "p1", 2, region="eu-west"))
    strings, _ = _jobs_table(job("j3", "p1", 3, region="eu-west"))
    assert mixed.column("region").to_pylist() == ["7", "eu-west"]
    assert strings.column("region").to_pylist() == ["eu-west"]


def test_a_missing_required_field_is_recorded_and_the_record_kept() -> None:
    """A project without name or created loads (nothing is dropped) and each gap is an issue."""
    record = project("p1", 1_700_000_000_000)
    del record["name"]
    record["created"] = None
    issues: list[Issue] = []
    table = typed("projects", [record], issues)
    assert table.num_rows == 1
    assert {(i["record_id"], i["field"], i["problem"]) for i in issues} == {
        ("p1", "name", "required but missing"),
        ("p1", "created", "required but missing"),
    }


def test_json_columns_hold_json_text() -> None:
    """Array fields are JSON text that parses back to the API's value; null stays null."""
    table, _ = _jobs_table(
        job("j1", "p1", 1, capture_types=["thermal", "rgb"], selected_days_of_week=[0, 6])
    )
    assert json.loads(table.column("capture_types").to_pylist()[0]) == ["thermal", "rgb"]
    assert json.loads(table.column("selected_days_of_week").to_pylist()[0]) == [0, 6]
    assert table.column("weeks_of_month").to_pylist() == [None]


def test_entity_tables_carry_hash_and_false_tombstone() -> None:
    """Entity rows have a non-null `_row_hash` and `_sync_tombstone = false`."""
    table, _ = _jobs_table(job("j1", "p1", 1))
    assert table.schema.field(settings.ROW_HASH_COLUMN).nullable is False
    assert table.schema.field("id").nullable is False
    assert table.column(settings.TOMBSTONE_COLUMN).to_pylist() == [False]


# --- row hash ---------------------------------------------------------------------------------


def test_row_hash_ignores_key_order_at_every_level() -> None:
    """Two records equal but for key order (nested too) hash the same."""
    a = {"id": "p1", "n": 1, "created_by": {"id": "u1", "email": "a@b"}}
    b = {"created_by": {"email": "a@b", "id": "u1"}, "n": 1, "id": "p1"}
    assert row_hash(a) == row_hash(b)


def test_row_hash_changes_when_any_field_changes() -> None:
    """Changing any one field (top-level or nested) changes the hash."""
    record = project("p1", 1_700_000_000_000)
    base = row_hash(record)
    for name, value in record.items():
        changed = dict(record)
        changed[name] = "something else" if value != "something else" else "x"
        assert row_hash(changed) != base, name
    nested = dict(record, created_by={**record["created_by"], "email": "new@example.com"})
    assert row_hash(nested) != base
    assert row_hash({**record, "new_field": None}) != base


def test_entity_row_hash_is_of_the_api_record() -> None:
    """The row hash is the API record's hash, not of the reshaped row."""
    record = project("p1", 1)
    row = creator_flattened_row(record)
    assert row[settings.ROW_HASH_COLUMN] == row_hash(record)
    member = {"id": "m1", "email": "x@y"}
    assert entity_row(member)[settings.ROW_HASH_COLUMN] == row_hash(member)
    job_record = {k: v for k, v in job("j1", "p9", 1).items() if k != "project_id"}
    assert job_row(job_record, "p9")["project_id"] == "p9"
    assert job_row(job_record, "p9")[settings.ROW_HASH_COLUMN] == row_hash(job_record)


# --- creators ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("creator", "expected_id"),
    [
        (PERSON, "u1"),
        (API_KEY_CREATOR, "apikey_1"),
        ({"email": "noid@example.com"}, None),
        (None, None),
    ],
    ids=["person", "api-key", "no-id", "null"],
)
def test_creator_becomes_created_by_id(
    creator: dict[str, Any] | None, expected_id: str | None
) -> None:
    """`created_by` becomes `created_by_id` (the walk gathers the creators for `users`); odd
    creators are tolerated (no id or null: a null id) and the row still types cleanly."""
    record = project("p1", 1, created_by=creator)
    row = creator_flattened_row(record)
    assert "created_by" not in row
    assert row["created_by_id"] == expected_id
    issues: list[Issue] = []
    table = typed("projects", [record], issues)
    assert table.column("created_by_id").to_pylist() == [expected_id]
    assert "created_by" not in table.column_names
    assert issues == []


def test_numeric_creator_id_becomes_text() -> None:
    """A numeric creator id is stored as a string."""
    row = creator_flattened_row(project("p1", 1, created_by={"id": 7, "email": "x@y"}))
    assert row["created_by_id"] == "7"


def test_user_row_for_person() -> None:
    """A person creator: kind `user`, display name "first last", seen span kept."""
    row = user_row(PERSON, 1_000, 2_000)
    assert row["id"] == "u1"
    assert row["kind"] == "user"
    assert row["display_name"] == "Ana Lima"
    assert row["email"] == "ana@example.com"
    assert (row["first_seen_at"], row["last_seen_at"]) == (1_000, 2_000)
    table = typed(USERS.table, [row], [])
    assert table.column("first_seen_at").cast(pa.int64()).to_pylist() == [1_000_000]


def test_user_row_for_api_key() -> None:
    """An API-key creator: kind `api_key`, display name the key's name, no person fields."""
    row = user_row(API_KEY_CREATOR, None, None)
    assert row["kind"] == "api_key"
    assert row["display_name"] == "CI"
    assert row["email"] is None and row["first_name"] is None
    assert typed(USERS.table, [row], []).num_rows == 1


def test_user_row_fallbacks() -> None:
    """Without a type: `user` when an email is present, else `unknown`; the display name falls
    back to the email; one name part alone is used."""
    assert user_row({"id": "x", "email": "e@x"}, None, None)["kind"] == "user"
    assert user_row({"id": "x", "email": "e@x"}, None, None)["display_name"] == "e@x"
    assert user_row({"id": "x"}, None, None)["kind"] == "unknown"
    assert user_row({"id": "x", "first_name": "Ana"}, None, None)["display_name"] == "Ana"


def test_user_row_hash_tracks_content() -> None:
    """The users row hash changes with the seen span and the creator's fields only."""
    base = user_row(PERSON, 1, 2)[settings.ROW_HASH_COLUMN]
    assert user_row(dict(PERSON), 1, 2)[settings.ROW_HASH_COLUMN] == base
    assert user_row(PERSON, 1, 3)[settings.ROW_HASH_COLUMN] != base
    assert user_row({**PERSON, "last_name": "X"}, 1, 2)[settings.ROW_HASH_COLUMN] != base


# --- deliveries -------------------------------------------------------------------------------


def _log_entry(payload: Any) -> dict[str, Any]:
    api = FakeApi.small()
    entry = dict(api.logs["wh1"][0])
    entry["request_payload"] = payload
    return entry


def test_delivery_row_parses_request_payload() -> None:
    """The payload text is kept and parsed into delivery_id, event, event_timestamp,
    workspace_id and data (JSON)."""
    payload = {
        "delivery_id": "d-1",
        "event": "job.created",
        "timestamp": 1_700_000_000_456,
        "workspace_id": "ws9",
        "data": {"id": "j1", "capture_types": ["rgb"]},
    }
    text = json.dumps(payload)
    row = delivery_row(_log_entry(text), "wh1")
    assert row["webhook_id"] == "wh1"
    assert (row["delivery_id"], row["event"], row["workspace_id"]) == ("d-1", "job.created", "ws9")
    issues: list[Issue] = []
    table = delivery_table(DELIVERIES, as_lines([_log_entry(text)]), "wh1", RUN, issues)
    assert table.column("request_payload").to_pylist() == [text]
    assert table.column("event_timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_456_000]
    assert json.loads(table.column("data").to_pylist()[0]) == payload["data"]
    assert issues == []


@pytest.mark.parametrize("payload", ['{"delivery_id": "d-1", ', "[1, 2]", '"text"', None], ids=str)
def test_delivery_row_tolerates_bad_payload(payload: Any) -> None:
    """Invalid JSON or a non-object payload: the record is kept, parsed columns are null."""
    table = delivery_table(DELIVERIES, as_lines([_log_entry(payload)]), "wh1", RUN, [])
    assert table.num_rows == 1
    assert table.column("id").to_pylist() == ["log0"]
    assert table.column("request_payload").to_pylist() == [payload]
    for name in ("delivery_id", "event", "event_timestamp", "workspace_id", "data"):
        assert table.column(name).to_pylist() == [None], name


# --- tombstones and issues --------------------------------------------------------------------


def test_tombstones_shape() -> None:
    """Tombstones carry the ids, null data columns, a distinct hash and `_sync_tombstone`."""
    table = tombstones(ENTITIES["jobs"].contract, ["j1", "j2"])
    declared = [c.name for c in TABLE_COLUMNS["jobs"]]
    assert table.column_names == [*declared, settings.ROW_HASH_COLUMN, settings.TOMBSTONE_COLUMN]
    assert table.column("id").to_pylist() == ["j1", "j2"]
    assert table.column(settings.TOMBSTONE_COLUMN).to_pylist() == [True, True]
    hashes = table.column(settings.ROW_HASH_COLUMN).to_pylist()
    assert len(set(hashes)) == 2 and all(h and "j" in h for h in hashes)
    for name in declared:
        if name != "id":
            assert table.column(name).null_count == 2, name
    assert table.schema.field("id").nullable is False
    assert table.schema.field(settings.ROW_HASH_COLUMN).nullable is False
    # the data columns have the same types as real rows, so both can share a load
    real, _ = _jobs_table(job("j3", "p1", 1))
    for name in declared:
        assert table.schema.field(name).type == real.schema.field(name).type, name


def test_issue_table() -> None:
    """`issue_table` turns issue dicts into the `_sync_issues` columns, all text."""
    _, issues = _jobs_table(job("j1", "p1", 1, latitude=99.0, status="weird"))
    table = issue_table(issues)
    assert table.column_names == [c.name for c in ISSUES.columns]
    assert table.num_rows == 2
    assert all(f.type == pa.string() for f in table.schema)
    assert sorted(table.column("field").to_pylist()) == ["latitude", "status"]
    assert issue_table([]).num_rows == 0


def test_unknown_created_by_on_jobs_is_loaded() -> None:
    """A `created_by` the spec does not give jobs is an unknown field: loaded, not dropped."""
    table, _ = _jobs_table(job("j1", "p1", 1, created_by={"id": "u1"}))
    assert "created_by" in table.column_names


def _delivery_entry(log_id: str, payload: Any, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": log_id,
        "event_type": "job.updated",
        "url": "https://hooks.example.com/x",
        "status": "failed",
        "response_status": 500,
        "response_body": "boom",
        "request_payload": payload if not isinstance(payload, dict) else json.dumps(payload),
        "duration_ms": 40,
        "error_message": None,
        "created": 1_700_000_000_000,
    }
    entry.update(fields)
    return entry


def as_lines(entries: list[dict[str, Any]]) -> LineBuffer:
    """Log entries as the walk keeps them: one JSON line each."""
    lines = LineBuffer()
    for entry in entries:
        lines.append(orjson.dumps(entry))
    return lines


PAYLOADS: list[Any] = [
    {
        "delivery_id": "d1",
        "event": "job.updated",
        "timestamp": 1_700_000_000_123,
        "workspace_id": "ws",
        "data": {"id": "j1", "name": "Tür — 検査", "score": 0.1, "n": [1, 2]},
    },
    {"delivery_id": "d2", "event": "job.deleted", "timestamp": 0, "data": None},
    {"delivery_id": "d3", "data": "plain text data", "timestamp": -5},
    {},
    "not json at all",
    "[1, 2, 3]",
    None,
]


@pytest.mark.parametrize("shift", range(len(PAYLOADS)))
def test_delivery_batches_typed_in_duckdb_equal_the_row_by_row_path(shift: int) -> None:
    """The fast path (payloads parsed by DuckDB) and the row-by-row path agree on every column,
    for valid, empty, invalid, non-object and missing payloads."""
    payloads = PAYLOADS[shift:] + PAYLOADS[:shift]
    entries = [_delivery_entry(f"l{n}", payload) for n, payload in enumerate(payloads)]
    fast = _delivery_table_fast(DELIVERIES, as_lines(entries), "wh1")
    assert fast is not None, "well-typed input takes the fast path"
    slow = typed_row_by_row(
        ENTITIES["webhook_deliveries"].contract, [delivery_row(e, "wh1") for e in entries], "r", []
    )
    assert fast.schema == slow.schema
    for name in fast.column_names:
        got, want = fast.column(name).to_pylist(), slow.column(name).to_pylist()
        if name == "data":
            got = [None if v is None else json.loads(v) for v in got]
            want = [None if v is None else json.loads(v) for v in want]
        assert got == want, name


@pytest.mark.parametrize(
    "odd",
    [
        {"request_payload": json.dumps({"delivery_id": 42})},
        {"request_payload": json.dumps({"timestamp": 1.5e12})},
        {"request_payload": json.dumps({"timestamp": True})},
        {"request_payload": json.dumps({"timestamp": 2**63})},
        {"request_payload": json.dumps({"event": ["a"]})},
        {"duration_ms": 2.5},
        {"created": "yesterday"},
        {"unexpected_field": 1},
    ],
)
def test_unusual_delivery_batches_take_the_reporting_path(odd: dict[str, Any]) -> None:
    """Anything the fast path cannot type exactly goes row by row, where breaches are reported."""
    entries = [_delivery_entry("ok", PAYLOADS[0]), {**_delivery_entry("odd", None), **odd}]
    assert _delivery_table_fast(DELIVERIES, as_lines(entries), "wh1") is None
    table = delivery_table(DELIVERIES, as_lines(entries), "wh1", "r", [])
    expected = typed_row_by_row(
        ENTITIES["webhook_deliveries"].contract, [delivery_row(e, "wh1") for e in entries], "r", []
    )
    assert table.equals(expected)


def test_a_failing_fast_path_falls_back_to_the_row_by_row_path() -> None:
    """The DuckDB engine running out of memory (or any other error of it) never fails a walk."""
    import duckdb

    from drone_ops_sync.sources.drone_ops.tables import payloads

    big = {**PAYLOADS[0], "data": {"blob": "x" * 200_000}}
    entries = [_delivery_entry(f"l{n}", big) for n in range(20)]
    payloads._duckdb.connection = duckdb.connect(config={"memory_limit": "1MB", "threads": 1})
    try:
        assert payloads._delivery_table_fast(DELIVERIES, as_lines(entries), "wh1") is None
        table = delivery_table(DELIVERIES, as_lines(entries), "wh1", "r", [])
    finally:
        del payloads._duckdb.connection
    slow = typed_row_by_row(
        ENTITIES["webhook_deliveries"].contract, [delivery_row(e, "wh1") for e in entries], "r", []
    )
    assert table.equals(slow)
