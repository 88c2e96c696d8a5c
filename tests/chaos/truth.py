"""The one independent check every chaos case ends with.

`assert_warehouse_matches_api` walks the API itself (tests/pipelines/warehouse_check.py, which
shares no code with the source) and compares, for every table, the warehouse's current rows
with it: ids and every value; users are the distinct `created_by` objects of projects and
webhooks. Then: no id current twice, no dlt package left pending in the pipeline folder, and a
following quiet run succeeds and adds nothing (no new row, no new version, nothing retired).

One documented exception: `users` keeps a creator the API no longer shows anywhere (the table
is merged, never retired, docs/warehouse.md), so only creators the API shows are compared.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb

from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from tests.pipelines.warehouse_check import (
    EPOCH,
    Warehouse,
    api_snapshot,
    expected_value,
    query,
    stored_value,
)

from .results import ChaosResults
from .watch import pending_packages

ENTITY_TABLES = ("projects", "jobs", "job_types", "team_members", "webhooks")
NO_HISTORY = ("webhook_deliveries", "users")
DATA_TABLES = (*ENTITY_TABLES, *NO_HISTORY)


def _epoch(ms: Any) -> Any:
    return None if ms is None else EPOCH + timedelta(milliseconds=ms)


class Reader:
    """One look at a warehouse (reads only): a DuckDB file or a PostgreSQL connection string,
    through a single connection for all of a check's queries (a connection costs ~70 ms),
    closed on exit."""

    def __init__(self, database: Warehouse, dataset: str) -> None:
        self.dataset = dataset
        self._con = _connect(database)
        self.tables: set[str] = set()
        if self._con is not None:
            names = self.rows(
                f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{dataset}'"
            )
            self.tables = {row["table_name"] for row in names}

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._con is not None:
            self._con.close()

    def rows(self, sql: str) -> list[dict[str, Any]]:
        """The statement's rows as dicts (none for a statement without a result), in this
        reader's one session."""
        assert self._con is not None
        if isinstance(self._con, duckdb.DuckDBPyConnection):
            cursor = self._con.execute(sql)  # a DuckDB cursor would be a session of its own
        else:
            cursor = self._con.cursor()
            cursor.execute(sql)
        if cursor.description is None:
            return []
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def current_rows(self, table: str) -> list[dict[str, Any]]:
        """Every current row (deliveries and users have no history), duplicates included."""
        if table not in self.tables:
            return []
        where = "" if table in NO_HISTORY else ' WHERE "_dlt_valid_to" IS NULL'
        return self.rows(f'SELECT * FROM "{self.dataset}"."{table}"{where}')

    def counts(self) -> dict[str, tuple[int, int]]:
        """(all rows, current rows) per data table."""
        counts: dict[str, tuple[int, int]] = {}
        for table in DATA_TABLES:
            if table not in self.tables:
                counts[table] = (0, 0)
                continue
            current = "true" if table in NO_HISTORY else '"_dlt_valid_to" IS NULL'
            row = self.rows(
                f"SELECT count(*) AS total, count(*) FILTER (WHERE {current}) AS current"
                f' FROM "{self.dataset}"."{table}"'
            )[0]
            counts[table] = (row["total"], row["current"])
        return counts


def _connect(database: Warehouse) -> Any:
    """A connection to the warehouse, None for a DuckDB file that does not exist yet."""
    if isinstance(database, str):
        import psycopg2

        connection = psycopg2.connect(database, connect_timeout=10)
        connection.autocommit = True
        return connection
    return duckdb.connect(str(database)) if database.exists() else None


def table_exists(database: Path, dataset: str, table: str) -> bool:
    with Reader(database, dataset) as reader:
        return table in reader.tables


def row_counts(database: Path, dataset: str) -> dict[str, tuple[int, int]]:
    with Reader(database, dataset) as reader:
        return reader.counts()


def duplicate_current_ids(database: Path, dataset: str) -> dict[str, int]:
    """Per data table, surplus current rows (an id current n times counts n - 1)."""
    surplus = {}
    with Reader(database, dataset) as reader:
        for table in DATA_TABLES:
            ids = [row["id"] for row in reader.current_rows(table)]
            if len(ids) != len(set(ids)):
                surplus[table] = len(ids) - len(set(ids))
    return surplus


def expected_users(api: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The distinct `created_by` objects of projects and webhooks, with the span of `created`
    of what each made (first_seen_at / last_seen_at). A creator shown differently by two
    records (a webhook's `created_by` has no `profile_picture`) is as the newest record shows
    it; of records created at the same millisecond, the copy whose canonical JSON hashes
    larger (docs/warehouse.md, users)."""
    users: dict[str, dict[str, Any]] = {}
    newest: dict[str, tuple[int, str]] = {}
    for table in ("projects", "webhooks"):
        for record in api[table].values():
            creator = record.get("created_by")
            if not isinstance(creator, dict) or creator.get("id") is None:
                continue
            created = record.get("created")
            created = created if isinstance(created, int) else None
            user_id = str(creator["id"])
            user = users.get(user_id)
            rank = (-1 if created is None else created, _canonical_hash(creator))
            if user is None or (created is not None and rank > newest[user_id]):
                spans = (created, created) if user is None else _span(user, created)
                users[user_id] = _user(creator, *spans)
                newest[user_id] = rank
            else:
                users[user_id].update(
                    zip(("first_seen_at", "last_seen_at"), _span(user, created), strict=True)
                )
    for user in users.values():
        user["first_seen_at"] = _epoch(user["first_seen_at"])
        user["last_seen_at"] = _epoch(user["last_seen_at"])
    return users


def _canonical_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _span(user: dict[str, Any], created: int | None) -> tuple[int | None, int | None]:
    first, last = user["first_seen_at"], user["last_seen_at"]
    if created is None:
        return first, last
    return (
        created if first is None else min(first, created),
        created if last is None else max(last, created),
    )


def _user(creator: dict[str, Any], first: int | None, last: int | None) -> dict[str, Any]:
    return {
        "kind": "api_key" if creator.get("type") == "api_key" else "user",
        "email": creator.get("email"),
        "first_name": creator.get("first_name"),
        "last_name": creator.get("last_name"),
        "profile_picture": creator.get("profile_picture"),
        "first_seen_at": first,
        "last_seen_at": last,
    }


def field_differences(
    table: str, record: dict[str, Any], row: dict[str, Any]
) -> list[tuple[str, Any, Any]]:
    """(field, API value, warehouse value) for every field of an API record that the
    warehouse row does not hold exactly."""
    differences = []
    for name, value in record.items():
        if name == "created_by":
            want: Any = value.get("id") if isinstance(value, dict) else None
            got: Any = row.get("created_by_id")
        else:
            try:
                want = expected_value(name, value)
            except (TypeError, ValueError, OverflowError):
                want = value  # not a value of the field's type: nothing could store it as is
            try:
                got = stored_value(name, row.get(name))
            except ValueError:
                got = row.get(name)
        if want != got:
            differences.append((name, want, got))
    if table == "webhook_deliveries":
        differences += _payload_differences(record, row)
    return differences


def _payload_differences(entry: dict[str, Any], row: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    try:
        payload = json.loads(entry.get("request_payload") or "")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        payload = {}
    data = row.get("data")
    stored_data = json.loads(data) if isinstance(data, str) else data
    pairs = [
        ("delivery_id", payload.get("delivery_id"), row.get("delivery_id")),
        ("event", payload.get("event"), row.get("event")),
        ("workspace_id", payload.get("workspace_id"), row.get("workspace_id")),
        ("event_timestamp", _epoch(payload.get("timestamp")), row.get("event_timestamp")),
        ("data", payload.get("data"), stored_data),
    ]
    return [(name, want, got) for name, want, got in pairs if want != got]


@dataclass
class TruthReport:
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Per table, ids the API shows that have no current row."""
    wrong: dict[str, list[str]] = field(default_factory=dict)
    """Per table, `id.field: API ... != warehouse ...` for rows with a stale or wrong value."""
    stale: dict[str, list[str]] = field(default_factory=dict)
    """Per table, current ids the API no longer shows."""
    duplicates: dict[str, int] = field(default_factory=dict)
    """Per table, surplus current rows (an id current n times counts n - 1)."""
    pending: list[str] = field(default_factory=list)
    quiet: list[str] = field(default_factory=list)
    """What the following quiet run did wrong (failed, added rows or versions, retired)."""

    @property
    def rows_lost(self) -> int:
        wrong_ids = sum(len({w.split(".", 1)[0] for w in ws}) for ws in self.wrong.values())
        return sum(len(ids) for ids in self.missing.values()) + wrong_ids

    @property
    def duplicate_rows(self) -> int:
        return sum(self.duplicates.values())

    @property
    def stale_rows(self) -> int:
        return sum(len(ids) for ids in self.stale.values())

    def problems(self) -> list[str]:
        out = []
        for table, ids in self.missing.items():
            out.append(f"{table}: {len(ids)} ids of the API missing, e.g. {ids[:5]}")
        for table, diffs in self.wrong.items():
            out.append(f"{table}: {len(diffs)} wrong values, e.g. {diffs[:5]}")
        for table, ids in self.stale.items():
            out.append(f"{table}: {len(ids)} current rows the API no longer shows: {ids[:5]}")
        for table, surplus in self.duplicates.items():
            out.append(f"{table}: {surplus} duplicate current rows")
        if self.pending:
            out.append(f"pending dlt packages left: {self.pending}")
        out += [f"quiet run: {problem}" for problem in self.quiet]
        return out


def compare_with_api(
    database: Warehouse,
    dataset: str,
    api: dict[str, dict[str, dict[str, Any]]],
    users: dict[str, dict[str, Any]] | None = None,
) -> TruthReport:
    """The warehouse's current rows against `api` (table -> id -> record, as the API shows
    them); `users` are the expected users rows (default: the creators `api` shows)."""
    report = TruthReport()
    expected: dict[str, dict[str, dict[str, Any]]] = {
        **api,
        "users": expected_users(api) if users is None else users,
    }
    with Reader(database, dataset) as reader:
        current = {table: reader.current_rows(table) for table in DATA_TABLES}
    for table in DATA_TABLES:
        rows = current[table]
        by_id: dict[str, dict[str, Any]] = {}
        surplus = 0
        for row in rows:
            if row["id"] in by_id:
                surplus += 1
            else:
                by_id[row["id"]] = row
        if surplus:
            report.duplicates[table] = surplus
        records = expected[table]
        missing = sorted(set(records) - set(by_id))
        # users is merged, never retired (docs/warehouse.md): a creator whose projects and
        # webhooks are all gone keeps the row of the last run that saw them
        stale = [] if table == "users" else sorted(set(by_id) - set(records))
        if missing:
            report.missing[table] = missing
        if stale:
            report.stale[table] = stale
        wrong = []
        for record_id in sorted(set(records) & set(by_id)):
            record = records[record_id]
            if table == "users":
                differences = [
                    (name, want, by_id[record_id].get(name))
                    for name, want in record.items()
                    if by_id[record_id].get(name) != want
                ]
            else:
                differences = field_differences(table, record, by_id[record_id])
            wrong += [
                f"{record_id}.{name}: API {want!r:.80} != warehouse {got!r:.80}"
                for name, want, got in differences
            ]
        if wrong:
            report.wrong[table] = wrong
    return report


def quiet_run_problems(
    database: Path, dataset: str, pipelines_dir: Path, overrides: dict[str, Any]
) -> list[str]:
    """Runs one more sync with nothing changed: it must succeed, load nothing (no row, no
    version, nothing retired) and leave no package pending."""
    before = row_counts(database, dataset)
    try:
        outcome = run_sync(
            Target(database=database, dataset=dataset, pipelines_dir=pipelines_dir),
            config=read_source_config(overrides),
        )
    except Exception as exc:  # a wedged warehouse: reported (and counted), not a crash here
        return [f"raised {type(exc).__name__}: {str(exc)[:300]}"]
    problems = []
    if not outcome.ok:
        failed = {
            name: (result.status, result.error)
            for name, result in outcome.report.tables.items()
            if result.status not in ("success", "skipped")
        }
        problems.append(f"failed: {failed or outcome.load_error}")
    for name in ENTITY_TABLES:
        result = outcome.report.tables.get(name)
        if result is not None and (result.new, result.changed, result.retired) != (0, 0, 0):
            problems.append(
                f"{name}: new {result.new}, changed {result.changed}, retired {result.retired}"
            )
    after = row_counts(database, dataset)
    for table in DATA_TABLES:
        if after[table] != before[table]:
            problems.append(f"{table}: (rows, current) went from {before[table]} to {after[table]}")
    pending = pending_packages(pipelines_dir)
    if pending:
        problems.append(f"left pending packages {pending}")
    return problems


def assert_warehouse_matches_api(
    database: Path,
    dataset: str,
    base_url: str,
    key: str,
    *,
    pipelines_dir: Path,
    overrides: dict[str, Any] | None = None,
    results: ChaosResults | None = None,
    kind: str | None = None,
    run_ok: bool | None = None,
    note: str = "",
) -> TruthReport:
    """Current rows == an API walk done here; no duplicate current id; nothing pending; a
    following quiet run adds nothing. Records the try in `results` under `kind` first (so a
    failing case still counts), then raises AssertionError listing every problem.

    The API must be quiet meanwhile: faults off, no churn, webhook deliveries settled."""
    api = api_snapshot(base_url, key)
    report = compare_with_api(database, dataset, api)
    report.pending = pending_packages(pipelines_dir)
    settings = {"base_url": base_url, "api_key": key, **(overrides or {})}
    report.quiet = quiet_run_problems(database, dataset, pipelines_dir, settings)
    problems = report.problems()
    if results is not None and kind is not None:
        results.add(
            kind,
            survived=not problems,
            run_ok=run_ok,
            rows_lost=report.rows_lost,
            duplicates=report.duplicate_rows,
            stale=report.stale_rows,
            note=note or "; ".join(problems)[:500],
        )
    assert not problems, "warehouse differs from the API:\n" + "\n".join(problems)
    return report


# -- failure messages (item 6) ----------------------------------------------------------------

ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) /v1/\S*")


def message_problems(
    table: str,
    status: str,
    error: str | None,
    *,
    endpoint: bool = True,
    table_name: bool = True,
) -> list[str]:
    """What a failed table's message lacks: the table (`table_name`), the endpoint
    (`endpoint`; False for failures not about one request, e.g. a refused mass deletion) and
    the cause; an empty message or a bare `StopIteration` is always a problem."""
    if status in ("success", "skipped", "interrupted"):
        return []
    text = (error or "").strip()
    if not text:
        return [f"{table} ({status}): empty error"]
    problems = []
    if "StopIteration" in text:
        problems.append(f"{table}: error says StopIteration: {text[:200]}")
    if table_name and not re.search(rf"(?<![A-Za-z0-9_]){re.escape(table)}(?![A-Za-z0-9_])", text):
        problems.append(f"{table}: error does not name the table: {text[:200]}")
    if endpoint and not ENDPOINT.search(text):
        problems.append(f"{table}: error names no endpoint: {text[:200]}")
    cause = ENDPOINT.sub("", text).replace(table, "")
    if len(re.findall(r"[A-Za-z]{3,}", cause)) < 2:
        problems.append(f"{table}: error gives no cause: {text[:200]}")
    return problems


def run_rows(database: Path, dataset: str, run_id: str) -> list[dict[str, Any]]:
    """The `_sync_runs` rows of one run."""
    if not table_exists(database, dataset, "_sync_runs"):
        return []
    return query(
        database,
        f"SELECT resource, status, error FROM \"{dataset}\"._sync_runs WHERE run_id = '{run_id}'",
    )
