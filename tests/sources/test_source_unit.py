"""The whole source through dlt into a DuckDB file, against the in-memory fake API.

No network and no simulator: the run's seams hand the client the fake API's MockTransport and
shrink its backoff, so retry storms stay fast.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import ConfigError, read_source_config
from drone_ops_sync.sources.drone_ops.config import checked_config
from drone_ops_sync.sources.drone_ops.http.client import DroneOpsClient
from drone_ops_sync.sources.drone_ops.internal import Seams, settings
from drone_ops_sync.sources.drone_ops.tables.entities import ALL_TABLES
from drone_ops_sync.sources.drone_ops.walk import WorkspaceWalk
from tests.sources.fake_api import API_KEY, BASE_URL, FakeApi, job, project

DATASET = "drone_ops"
Sync = Callable[..., SyncOutcome]
Handler = Callable[[httpx.Request], httpx.Response]


FAST_RETRIES = {"backoff_initial_seconds": 0.001, "backoff_max_seconds": 0.005}


def _fake_sync(
    api: FakeApi, target: Target, source_overrides: dict[str, Any] | None = None, **kwargs: Any
) -> SyncOutcome:
    """`run_sync` against `api`: its MockTransport through the run's seams, backoff shrunk."""
    config = read_source_config(
        {"base_url": BASE_URL, "api_key": API_KEY, **(source_overrides or {})}
    )
    seams = Seams(transport=api.transport(), **FAST_RETRIES)
    return run_sync(target, config=config, seams=seams, **kwargs)


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse after one clean first run of `FakeApi.small()` (made once per module)."""
    root = tmp_path_factory.mktemp("baseline")
    outcome = _fake_sync(
        FakeApi.small(), Target(database=root / "w.duckdb", pipelines_dir=root / "p")
    )
    assert outcome.ok, (outcome.load_error, outcome.report.tables)
    return root / "w.duckdb"


@pytest.fixture
def api() -> FakeApi:
    return FakeApi.small()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "w.duckdb"


@pytest.fixture
def baseline(baseline_file: Path, database: Path) -> None:
    """Starts the test from the baseline warehouse (local pipeline state is fresh, so dlt
    restores it from the warehouse, as on a new machine)."""
    shutil.copyfile(baseline_file, database)


@pytest.fixture
def sync(api: FakeApi, database: Path, tmp_path: Path) -> Sync:
    """Runs `run_sync` against the fake API; keyword arguments go to `run_sync`."""
    target = Target(database=database, pipelines_dir=tmp_path / "pipelines")

    def run(**kwargs: Any) -> SyncOutcome:
        api.requests.clear()
        return _fake_sync(api, target, **kwargs)

    return run


@pytest.fixture
def sql(database: Path) -> Iterator[Callable[[str], list[tuple[Any, ...]]]]:
    """Runs a query on the warehouse with a fresh read-only connection each time."""

    def query(statement: str) -> list[tuple[Any, ...]]:
        with duckdb.connect(str(database), read_only=True) as connection:
            return connection.sql(statement).fetchall()

    yield query


def _counts(sql: Callable[[str], list[tuple[Any, ...]]]) -> dict[str, int]:
    tables = [
        row[0]
        for row in sql(
            "SELECT table_name FROM information_schema.tables"
            f" WHERE table_schema = '{DATASET}' AND table_name NOT LIKE '\\_%' ESCAPE '\\'"
        )
    ]
    return {name: sql(f"SELECT count(*) FROM {DATASET}.{name}")[0][0] for name in tables}


def _current(sql: Callable[[str], list[tuple[Any, ...]]], table: str) -> list[str]:
    rows = sql(f"SELECT id FROM {DATASET}.{table} WHERE _dlt_valid_to IS NULL ORDER BY id")
    return [row[0] for row in rows]


def _runs(sql: Callable[[str], list[tuple[Any, ...]]], run_id: str) -> dict[str, tuple[Any, ...]]:
    rows = sql(
        "SELECT resource, status, rows_new, rows_changed, rows_retired, error"
        f" FROM {DATASET}._sync_runs WHERE run_id = '{run_id}'"
    )
    return {row[0]: row[1:] for row in rows}


def _types(sql: Callable[[str], list[tuple[Any, ...]]], table: str) -> dict[str, str]:
    return {row[0]: row[1] for row in sql(f"DESCRIBE {DATASET}.{table}")}


def test_first_run_loads_every_entity_with_types(
    api: FakeApi, baseline: None, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """A first run loads every entity once, current, with the contract's column types."""
    assert _counts(sql) == {
        "projects": 4,
        "jobs": 5,
        "job_types": 1,
        "team_members": 1,
        "webhooks": 1,
        "webhook_deliveries": 5,
        "users": 2,
    }
    assert _current(sql, "projects") == sorted(api.projects)
    assert _current(sql, "jobs") == sorted(api.jobs)
    projects = _types(sql, "projects")
    assert projects["created"] == projects["updated"] == "TIMESTAMP WITH TIME ZONE"
    assert projects["start_date"] == projects["end_date"] == "DATE"
    assert projects["archived"] == "BOOLEAN"
    jobs = _types(sql, "jobs")
    assert jobs["capture_types"] == jobs["selected_days_of_week"] == "JSON"
    assert jobs["latitude"] == "DOUBLE"
    assert jobs["flights_per_occurrence"] == "BIGINT"
    assert _types(sql, "webhooks")["event_types"] == "JSON"
    assert _types(sql, "webhooks")["last_triggered_at"] == "TIMESTAMP WITH TIME ZONE"
    deliveries = _types(sql, "webhook_deliveries")
    assert deliveries["event_timestamp"] == deliveries["created"] == "TIMESTAMP WITH TIME ZONE"
    assert deliveries["data"] == "JSON"
    assert _types(sql, "users")["first_seen_at"] == "TIMESTAMP WITH TIME ZONE"
    # exact values: ms → µs, dates, JSON, creators
    assert sql(
        f"SELECT epoch_ms(created), start_date::VARCHAR, created_by_id, archived"
        f" FROM {DATASET}.projects WHERE id = 'p4'"
    ) == [(1_700_000_000_004, "2026-01-01", "u1", True)]
    assert sql(f"SELECT capture_types->>0 FROM {DATASET}.jobs WHERE id = 'j1'") == [
        ("thermal_inspection",)
    ]
    assert sql(
        f"SELECT epoch_ms(event_timestamp), delivery_id, data->>'status'"
        f" FROM {DATASET}.webhook_deliveries WHERE id = 'log2'"
    ) == [(1_700_000_002_000, "d-log2", "planned")]
    assert sql(f"SELECT id, kind, display_name FROM {DATASET}.users ORDER BY id") == [
        ("apikey_1", "api_key", "CI"),
        ("u1", "user", "Ana Lima"),
    ]
    assert sql(f"SELECT created_by_id FROM {DATASET}.webhooks") == [("apikey_1",)]
    assert sql(f"SELECT count(*) FROM {DATASET}.jobs WHERE _sync_tombstone") == [(0,)]
    [(run_id,)] = sql(f"SELECT DISTINCT run_id FROM {DATASET}._sync_runs")
    runs = _runs(sql, run_id)
    assert set(runs) == set(ALL_TABLES)
    assert {name: row[0] for name, row in runs.items()} == dict.fromkeys(runs, "success")
    assert runs["jobs"][1:4] == (5, 0, 0)
    assert runs["webhook_deliveries"][1] == 5


def test_change_then_no_change_then_full_refresh(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """Run 2: a changed project gets exactly one new version and the old one is retired, the
    other entities are untouched; new deliveries are loaded, including a late one inside the
    overlap window, while known ids there are skipped. Run 3 (no change): no rows anywhere,
    one log request per webhook. Run 4 (full refresh): every delivery refetched, the merge
    still holds each id once."""
    first_load = sql(f"SELECT id, _dlt_load_id FROM {DATASET}.projects ORDER BY id")

    api.projects["p1"]["status"] = "in_progress"
    api.projects["p1"]["updated"] += 5
    api.add_log("wh1", "log9", 1_700_000_900_000)  # moves the next window past log0-4
    api.add_log("wh1", "late", 1_700_000_000_500)  # older than log4, inside this window
    second = sync()
    assert second.ok
    assert sql(
        f"SELECT status, _dlt_valid_to IS NULL FROM {DATASET}.projects WHERE id = 'p1'"
        " ORDER BY _dlt_valid_from"
    ) == [("planned", False), ("in_progress", True)]
    assert _current(sql, "projects") == ["p1", "p2", "p3", "p4"]
    others = [row for row in first_load if row[0] != "p1"]
    assert (
        sql(f"SELECT id, _dlt_load_id FROM {DATASET}.projects WHERE id <> 'p1' ORDER BY id")
        == others
    )
    runs = _runs(sql, second.report.run_id)
    assert runs["projects"][:4] == ("success", 0, 1, 0)
    assert runs["jobs"][:4] == ("success", 0, 0, 0)
    assert runs["webhook_deliveries"][:2] == ("success", 2)
    assert [row[0] for row in sql(f"SELECT id FROM {DATASET}.webhook_deliveries ORDER BY id")] == [
        "late",
        *(f"log{n}" for n in range(5)),
        "log9",
    ]

    before = _counts(sql)
    third = sync()
    assert third.ok
    assert _counts(sql) == before
    runs = _runs(sql, third.report.run_id)
    for name, row in runs.items():
        assert row[:4] == ("success", 0, 0, 0), name
    assert api.count("/v1/webhooks/wh1") == 1

    fourth = sync(full_refresh=True)
    assert fourth.ok
    assert fourth.report.tables["webhook_deliveries"].new == 7
    assert sql(f"SELECT count(*), count(DISTINCT id) FROM {DATASET}.webhook_deliveries") == [(7, 7)]


def test_deletions_are_retired_only_after_a_404(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """A job gone from its list is retired once GET of the job says 404; a job the list merely
    omitted (its GET still finds it) stays current and unversioned; a deleted project is
    retired together with its jobs."""
    del api.jobs["j5"]  # j5 belongs to p3
    del api.projects["p1"]  # and with it its only job, j3
    del api.jobs["j3"]
    j4 = api.jobs["j4"]  # p2's list will omit j1 this time
    api.force(
        "/v1/projects/p2/jobs",
        httpx.Response(200, json={"jobs": [j4], "count": 1, "cursor": None}),
    )
    outcome = sync()
    assert outcome.ok, outcome.report.tables
    assert api.count("/v1/projects/p3/jobs/j5") == 1
    assert api.count("/v1/projects/p1/jobs/j3") == 1
    assert api.count("/v1/projects/p2/jobs/j1") == 1
    assert api.count("/v1/projects/p1") == 1
    assert _current(sql, "jobs") == ["j1", "j2", "j4"]
    assert _current(sql, "projects") == ["p2", "p3", "p4"]
    assert sql(f"SELECT count(*), count(_dlt_valid_to) FROM {DATASET}.jobs WHERE id = 'j1'") == [
        (1, 0)
    ]
    assert sql(
        f"SELECT id, count(*), count(_dlt_valid_to) FROM {DATASET}.jobs"
        " WHERE id IN ('j3', 'j5') GROUP BY id ORDER BY id"
    ) == [("j3", 1, 1), ("j5", 1, 1)]
    jobs = outcome.report.tables["jobs"]
    assert (jobs.new, jobs.changed, jobs.retired) == (0, 0, 2)
    assert outcome.report.tables["projects"].retired == 1


def test_503_storm_on_jobs_fails_the_jobs_table_only(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """A 503 storm outlasting the retry budget fails `jobs` alone: nothing of jobs is loaded
    or retired, the other tables load, and `_sync_runs` records the failure and why."""
    jobs_before = sql(f"SELECT * FROM {DATASET}.jobs ORDER BY id")
    api.storm("/v1/projects/p1/jobs")
    del api.jobs["j2"]  # would be retired by a complete walk
    api.jobs["j6"] = job("j6", "p2", 1_700_000_200_000)  # would be new
    api.projects["p2"]["name"] = "Renamed"
    outcome = sync(
        source_overrides={"retry_budget_seconds": 0.3, "max_attempts": 1_000, "max_workers": 4}
    )
    assert not outcome.ok
    result = outcome.report.tables["jobs"]
    assert result.status == "failed"
    assert result.error is not None
    assert "GET /v1/projects/p1/jobs" in result.error and "still failing" in result.error
    assert result.retries > 0
    assert sql(f"SELECT * FROM {DATASET}.jobs ORDER BY id") == jobs_before
    assert outcome.report.tables["projects"].status == "success"
    assert sql(
        f"SELECT name FROM {DATASET}.projects WHERE id = 'p2' AND _dlt_valid_to IS NULL"
    ) == [("Renamed",)]
    runs = _runs(sql, outcome.report.run_id)
    assert runs["jobs"][0] == "failed"
    assert "still failing" in runs["jobs"][4]
    assert {name: row[0] for name, row in runs.items() if name != "jobs"} == dict.fromkeys(
        set(runs) - {"jobs"}, "success"
    )


def test_mass_delete_guard_refuses_then_allows(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """Retiring 3 of 5 jobs (> 50%) is refused with a way out; allow_mass_delete retires them."""
    for job_id in ("j1", "j2", "j3"):
        del api.jobs[job_id]
    api.projects["p1"]["name"] = "Changed too"
    refused = sync()
    assert not refused.ok
    result = refused.report.tables["jobs"]
    assert result.status == "refused"
    assert result.error is not None
    assert "--allow-mass-delete" in result.error and "max_retire_share" in result.error
    assert "3 of 5" in result.error
    assert _current(sql, "jobs") == ["j1", "j2", "j3", "j4", "j5"]
    assert refused.report.tables["projects"].status == "success"
    assert _runs(sql, refused.report.run_id)["jobs"][0] == "refused"

    allowed = sync(allow_mass_delete=True)
    assert allowed.ok
    assert _current(sql, "jobs") == ["j4", "j5"]
    assert allowed.report.tables["jobs"].retired == 3


def test_configured_webhook_that_404s_fails_webhooks_naming_it(
    api: FakeApi, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """A configured webhook id the API does not know fails webhooks with that id in the error;
    the entity tables still load."""
    outcome = sync(source_overrides={"webhook_ids": ["wh1", "wh_missing"]})
    assert not outcome.ok
    webhooks = outcome.report.tables["webhooks"]
    assert webhooks.status == "failed"
    assert webhooks.error is not None
    assert "wh_missing" in webhooks.error and "webhook_ids" in webhooks.error
    assert outcome.report.tables["webhook_deliveries"].status == "failed"
    assert "wh_missing" in (outcome.report.tables["webhook_deliveries"].error or "")
    assert api.count("/v1/webhooks") == 0  # configured ids replace the list endpoint
    assert outcome.report.tables["projects"].status == "success"
    assert _current(sql, "projects") == ["p1", "p2", "p3", "p4"]


def _archive_p1_mid_walk(api: FakeApi) -> None:
    """The archived list shows p1 archived (a newer version) while the active list still shows
    it as it was: what a walk sees when p1 is archived between the two lists."""
    handle = api.handle

    def moved_mid_walk(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/projects" and request.url.params.get("archived") == "true":
            p1 = dict(api.projects["p1"], archived=True, updated=api.projects["p1"]["updated"] + 1)
            body = {"projects": [api.projects["p4"], p1], "count": 2, "cursor": None}
            return httpx.Response(200, json=body)
        return handle(request)

    api.handle = moved_mid_walk  # type: ignore[method-assign]


def test_project_seen_in_both_lists_has_one_current_row(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """A project archived mid-walk shows up in both project lists; it still has exactly one
    current version afterwards."""

    _archive_p1_mid_walk(api)
    assert sync().ok
    assert sql(
        f"SELECT count(*) FROM {DATASET}.projects WHERE id = 'p1' AND _dlt_valid_to IS NULL"
    ) == [(1,)]


def test_rolling_refresh_walks_a_project_changed_between_the_lists_once(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """Rolling run 2 with 1,000 slices walks slice 1, which holds none of these projects: only
    p1, archived mid-walk (unchanged in one list, changed in the other), has its jobs walked,
    once, whichever list the walk reads first; its changed job arrives, the rest is untouched."""
    moved_job = next(j for j in api.jobs.values() if j["project_id"] == "p1")
    moved_job["status"] = "completed"

    _archive_p1_mid_walk(api)
    outcome = sync(source_overrides={"job_refresh_slices": 1000})
    assert outcome.ok, outcome.report.tables
    jobs = outcome.report.tables["jobs"]
    assert jobs.scope is not None and "jobs of 1 of 4 projects" in jobs.scope, jobs.scope
    assert [api.count(f"/v1/projects/{p}/jobs") for p in ("p1", "p2", "p3", "p4")] == [1, 0, 0, 0]
    assert (jobs.new, jobs.changed, jobs.retired) == (0, 1, 0)
    assert sql(
        f"SELECT status FROM {DATASET}.jobs WHERE id = '{moved_job['id']}'"
        " AND _dlt_valid_to IS NULL"
    ) == [("completed",)]
    assert len(_current(sql, "jobs")) == len(api.jobs), "skipped projects' jobs stay current"


def test_first_load_appends_rows_shaped_like_first_versions(
    api: FakeApi, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]], database: Path
) -> None:
    """A table the warehouse does not have is appended, not merged: its rows are valid from the
    run's start and current; the next run merges into it and keeps the history continuous.
    A delivery id the walk met twice (here under two webhooks) is loaded once."""
    api.webhooks["wh2"] = {**api.webhooks["wh1"], "id": "wh2", "name": "Second feed"}
    api.add_log("wh2", "log1", 1_700_000_001_000)
    first = sync()
    assert first.ok, first.report.tables
    for table in ("projects", "jobs", "job_types", "team_members", "webhooks"):
        assert sql(f"SELECT DISTINCT _dlt_valid_from, _dlt_valid_to FROM {DATASET}.{table}") == [
            (first.report.started_at, None)
        ], table
    assert sql(f"SELECT count(*), count(DISTINCT id) FROM {DATASET}.webhook_deliveries") == [(5, 5)]

    api.projects["p2"]["name"] = "Renamed"
    api.projects["p2"]["updated"] += 5
    second = sync()
    assert second.ok, second.report.tables
    history = sql(
        f"SELECT name, _dlt_valid_from, _dlt_valid_to FROM {DATASET}.projects WHERE id = 'p2'"
        " ORDER BY _dlt_valid_from"
    )
    assert len(history) == 2
    (old_name, old_from, old_to), (new_name, new_from, new_to) = history
    assert new_name == "Renamed" and old_name != "Renamed"
    assert old_from == first.report.started_at
    assert old_to == new_from and new_to is None, "the old version ends where the new one starts"
    with duckdb.connect(str(database), read_only=True) as connection:
        validity_types = dict(
            connection.sql(
                f"SELECT table_name, data_type FROM information_schema.columns"
                f" WHERE table_schema = '{DATASET}' AND column_name = '_dlt_valid_from'"
            ).fetchall()
        )
    assert set(validity_types.values()) == {"TIMESTAMP WITH TIME ZONE"}, validity_types


def test_closing_a_walk_under_way_stops_it_promptly(api: FakeApi) -> None:
    """A run that ends early (an error, Ctrl-C) stops the background walk after the request in
    flight, and nothing of the unfinished tables is kept."""
    import threading
    import time

    from drone_ops_sync.sources.drone_ops.walk.plan import WalkPlan

    release = threading.Event()

    def slow(request: httpx.Request) -> httpx.Response:
        if "/jobs" in request.url.path:
            release.wait(5)
        return api.handle(request)

    client = DroneOpsClient(BASE_URL, API_KEY, transport=httpx.MockTransport(slow))
    walk = WorkspaceWalk(
        client,
        WalkPlan(tables=frozenset({"projects", "jobs"})),
        run_id="r",
        max_workers=4,
        cancel=threading.Event(),
    )
    walk.start()
    time.sleep(0.2)
    started = time.monotonic()
    closer = threading.Thread(target=walk.close)
    closer.start()
    release.set()
    closer.join(10)
    assert not closer.is_alive(), "close() returned"
    assert time.monotonic() - started < 5
    assert walk.tables["jobs"].failed, "an unfinished table is never loaded"


def test_rows_a_replayed_append_wrote_twice_are_removed_by_the_next_run(
    api: FakeApi, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]], database: Path
) -> None:
    """A crash between DuckDB's commit of an appended file and dlt recording it replays that
    file; the repeats (same id, version and load time) are removed, real history is kept."""
    assert sync().ok
    api.projects["p1"]["name"] = "Second version"
    api.projects["p1"]["updated"] += 5
    assert sync().ok
    before = _counts(sql)
    with duckdb.connect(str(database)) as connection:
        for table in ("jobs", "projects", "webhook_deliveries"):
            connection.execute(
                f"INSERT INTO {DATASET}.{table} SELECT * REPLACE (uuid()::VARCHAR AS _dlt_id)"
                f" FROM {DATASET}.{table}"
            )
    outcome = sync()
    assert outcome.ok, outcome.report.tables
    assert any("replayed" in note for note in outcome.notes), outcome.notes
    counts = _counts(sql)
    assert counts["jobs"] == before["jobs"]
    assert counts["webhook_deliveries"] == before["webhook_deliveries"]
    # the retired version of p1 was copied too, but only current repeats are replays
    assert counts["projects"] == before["projects"] + 1
    assert sql(f"SELECT count(*) FROM {DATASET}.projects WHERE _dlt_valid_to IS NULL") == [
        (len(api.projects),)
    ]


@pytest.mark.parametrize(
    ("setting", "value", "why"),
    [
        ("job_refresh_slices", 0, "from 1 to 1000"),
        ("job_refresh_slices", 1001, "from 1 to 1000"),
        ("job_refresh_slices", True, "not a number"),
        ("job_refresh_slices", "many", "not a whole number"),
        ("max_workers", 0, "from 1 to 256"),
        ("max_workers", "abc", "not a whole number"),
        ("max_retire_share", 0, "above 0 and at most 1"),
        ("jobs_path", "/v1/projects/{projectId}/jobs", "{project_id}"),
        ("webhook_ids", "wh_x", "not a list"),
    ],
)
def test_invalid_sync_settings_name_the_setting(setting: str, value: object, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        checked_config(base_url="http://127.0.0.1:9", api_key="k", **{setting: value})
    assert f"sources.drone_ops.{setting}" in str(info.value) and why in str(info.value)


def _list_j1_under_p2_too(api: FakeApi) -> None:
    """The API lists job j1 under its own project and, with another project_id, under p2."""
    rows = [j for j in api.jobs.values() if j["project_id"] == "p2"]
    stray = {**api.jobs["j1"], "project_id": "p2"}
    page = {"jobs": [*rows, stray], "cursor": None}
    api.force("/v1/projects/p2/jobs", httpx.Response(200, json=page))


def test_a_job_listed_under_two_projects_has_one_current_row_that_stays(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """Same id under two projects: one current row, the same choice on every run (no version
    flip-flop), and a quiet run after it writes nothing."""
    current = f"SELECT id, project_id FROM {DATASET}.jobs WHERE _dlt_valid_to IS NULL ORDER BY id"
    for _ in range(2):
        _list_j1_under_p2_too(api)
        assert sync().ok
        rows = sql(current)
        assert len(rows) == len({row[0] for row in rows}) == len(api.jobs), rows
    chosen = dict(sql(current))["j1"]
    _list_j1_under_p2_too(api)
    outcome = sync()
    assert outcome.report.tables["jobs"].wrote is False
    assert dict(sql(current))["j1"] == chosen


def test_two_current_rows_of_one_id_are_healed_by_the_next_run(
    api: FakeApi,
    baseline: None,
    database: Path,
    sync: Sync,
    sql: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    """A warehouse written by an older version with two current rows for one id (a job
    repeated across projects) is repaired: the next run leaves exactly one."""
    with duckdb.connect(str(database)) as connection:
        connection.execute(
            f"INSERT INTO {DATASET}.jobs SELECT * REPLACE (uuid()::VARCHAR AS _dlt_id,"
            " 'p9' AS project_id, 'other-hash' AS _row_hash)"
            f" FROM {DATASET}.jobs WHERE id = 'j1' AND _dlt_valid_to IS NULL"
        )
    assert sql(
        f"SELECT count(*) FROM {DATASET}.jobs WHERE id = 'j1' AND _dlt_valid_to IS NULL"
    ) == [(2,)]
    assert sync().ok
    assert sql(
        f"SELECT project_id FROM {DATASET}.jobs WHERE id = 'j1' AND _dlt_valid_to IS NULL"
    ) == [(api.jobs["j1"]["project_id"],)]


def test_a_failing_deletion_check_fails_only_its_table_naming_endpoint_and_cause(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """p3 vanishes from the lists and its single-record check keeps answering 502: projects
    loads nothing and says why; the other tables of its load group still load."""
    del api.projects["p3"]
    api.jobs["j1"]["status"] = "completed"
    api.storm("/v1/projects/p3", 502)
    outcome = sync(source_overrides={"retry_budget_seconds": 0.3, "max_attempts": 3})
    tables = outcome.report.tables
    assert tables["projects"].status == "failed"
    error = tables["projects"].error or ""
    assert "GET /v1/projects/p3" in error and "502" in error, error
    assert {name: tables[name].status for name in ("jobs", "job_types", "team_members")} == {
        "jobs": "success",
        "job_types": "success",
        "team_members": "success",
    }
    assert sql(f"SELECT status FROM {DATASET}.jobs WHERE id = 'j1' AND _dlt_valid_to IS NULL") == [
        ("completed",)
    ]
    assert sql(
        f"SELECT count(*) FROM {DATASET}.projects WHERE id = 'p3' AND _dlt_valid_to IS NULL"
    ) == [(1,)]
    recorded = sql(
        f"SELECT resource, status, error FROM {DATASET}._sync_runs"
        f" WHERE run_id = '{outcome.report.run_id}' ORDER BY resource"
    )
    assert len(recorded) == len(ALL_TABLES)
    assert all(status == "success" or error for _, status, error in recorded), recorded


def _archived_list(api: FakeApi, page: Callable[[int], dict[str, Any]]) -> Handler:
    """A handler that answers the archived-projects list with `page(n)` for its n-th request
    (counted in `api.requests`) and everything else as `api` does."""
    answer = api.handle

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/projects" and request.url.params.get("archived") == "true":
            api.requests.append(request)
            return httpx.Response(200, json=page(len(_archived_requests(api)) - 1))
        return answer(request)

    return handle


def _archived_requests(api: FakeApi) -> list[httpx.Request]:
    return [
        r
        for r in api.requests
        if r.url.path == "/v1/projects" and r.url.params.get("archived") == "true"
    ]


def test_a_list_of_endless_empty_pages_fails_projects_after_a_few_naming_it(
    api: FakeApi,
    baseline: None,
    sync: Sync,
    sql: Callable[[str], list[tuple[Any, ...]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The archived-projects list answering every page empty with a fresh cursor fails
    `projects` (and so `jobs` and `users`) after `MAX_EMPTY_PAGES_IN_A_ROW` pages, naming the
    endpoint; nothing of them is loaded."""
    empty = _archived_list(api, lambda n: {"projects": [], "count": 0, "cursor": f"c{n}"})
    monkeypatch.setattr(api, "handle", empty)
    before = sql(f"SELECT * FROM {DATASET}.projects ORDER BY id, _dlt_valid_from")
    outcome = sync()
    assert not outcome.ok
    assert len(_archived_requests(api)) == settings.MAX_EMPTY_PAGES_IN_A_ROW
    projects = outcome.report.tables["projects"]
    assert projects.status == "failed"
    assert "GET /v1/projects" in (projects.error or "")
    assert f"{settings.MAX_EMPTY_PAGES_IN_A_ROW} empty pages in a row" in (projects.error or "")
    assert {outcome.report.tables[name].status for name in ("jobs", "users")} == {"failed"}
    assert sql(f"SELECT * FROM {DATASET}.projects ORDER BY id, _dlt_valid_from") == before


def test_the_archived_list_stops_at_its_next_page_once_projects_failed(
    api: FakeApi, baseline: None, sync: Sync, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the active list failed `projects`, the archived list (a long one, every page
    new rows) stops at its next page instead of walking on for nothing: at most a few pages
    of its 300, and the summary gives the active list's reason."""
    refused = threading.Event()
    api.force("/v1/projects", httpx.Response(400, json={"message": "Invalid cursor"}))
    forced = api.handle

    def first_refused(request: httpx.Request) -> httpx.Response:
        answer = forced(request)
        if answer.status_code == 400:
            refused.set()
        return answer

    def page(n: int) -> dict[str, Any]:
        if n > 0:
            refused.wait(10)  # the active list's failure has been answered
        row = project(f"pa{n}", 1_700_000_000_100 + n, archived=True)
        return {"projects": [row], "count": 1, "cursor": f"c{n}" if n < 299 else None}

    monkeypatch.setattr(api, "handle", first_refused)
    monkeypatch.setattr(api, "handle", _archived_list(api, page))
    outcome = sync()
    projects = outcome.report.tables["projects"]
    assert projects.status == "failed"
    assert "Invalid cursor" in (projects.error or "")
    assert refused.is_set()
    assert len(_archived_requests(api)) <= 10


def test_users_load_nothing_while_a_table_they_are_made_from_is_refused(
    api: FakeApi, baseline: None, sync: Sync, sql: Callable[[str], list[tuple[Any, ...]]]
) -> None:
    """With three of four projects gone the guard refuses `projects`; `users`,
    made from projects' creators, would be recomputed from the one project left (u1 first seen
    later): it loads nothing and says which table held it back, then loads with projects."""
    users_before = sql(f"SELECT * FROM {DATASET}.users ORDER BY id")
    for project_id in ("p1", "p2", "p3"):
        del api.projects[project_id]
    refused = sync()
    tables = refused.report.tables
    assert tables["projects"].status == "refused"
    users = tables["users"]
    assert users.status == "failed"
    assert "projects" in (users.error or "") and "refused" in (users.error or "")
    assert sql(f"SELECT * FROM {DATASET}.users ORDER BY id") == users_before
    assert _runs(sql, refused.report.run_id)["users"][0] == "failed"

    allowed = sync(allow_mass_delete=True)
    assert allowed.ok
    assert allowed.report.tables["users"].changed == 1
    assert sql(f"SELECT epoch_ms(first_seen_at) FROM {DATASET}.users WHERE id = 'u1'") == [
        (1_700_000_000_004,)
    ]
