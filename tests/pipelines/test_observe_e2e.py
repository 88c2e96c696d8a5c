"""Operating the sync: `drone-sync status`, alerts, JSON events, the metrics textfile and
OpenLineage events, each driven through the CLI in a subprocess against the simulator over HTTP
and real DuckDB files; alerts and lineage go to a real receiver on 127.0.0.1 that the test
starts and stops."""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import (
    ALL_TABLES,
    EXIT_BUSY,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    TRACEBACK,
    Result,
    cli_env,
    closed_loopback_port,
    held_for_writing,
    run_cli,
    run_in_process,
    wait_until,
)
from .receiver import running_receiver
from .test_unattended import TABLE_SUMMARY_KEYS, summary_of

pytestmark = pytest.mark.e2e
HOOK = "RUNTIME__SLACK_INCOMING_HOOK"


@pytest.fixture(scope="module")
def shared_sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=11, scale="tiny", admin=True) as handle:
        yield handle


def run_args(database: Path, *more: str) -> list[str]:
    return ["run", "--no-models", "--no-snapshot", "--database", str(database), *more]


def json_objects(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.out.splitlines() if line.strip()]


def synced(tmp_path: Path, sim: SimulatorHandle) -> tuple[Path, dict[str, str]]:
    database = tmp_path / "w.duckdb"
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    result = run_cli(run_args(database), env, tmp_path)
    assert result.code == EXIT_OK, result.describe()
    return database, env


@pytest.fixture(scope="module")
def status_warehouse(
    tmp_path_factory: pytest.TempPathFactory, shared_sim: SimulatorHandle
) -> tuple[Path, dict[str, str]]:
    """One synced warehouse for the tests that only read it (`status`, a writer's lock)."""
    return synced(tmp_path_factory.mktemp("status"), shared_sim)


def test_status_is_fresh_then_stale_and_alerts(
    tmp_path: Path, status_warehouse: tuple[Path, dict[str, str]]
) -> None:
    database, env = status_warehouse
    fresh = run_cli(["status", "--database", str(database)], env, tmp_path)
    assert fresh.code == EXIT_OK, fresh.describe()
    assert len(fresh.lines()) == len(ALL_TABLES), fresh.describe()
    assert all(line.startswith("fresh: ") for line in fresh.lines()), fresh.describe()
    time.sleep(1.2)
    with running_receiver() as receiver:
        env_hook = {**env, HOOK: f"{receiver.url}/hooks/T0/B0/secret"}
        only = ["status", "--database", str(database), "--max-age", "1s"]
        stale = run_cli([*only, "--resources", "projects,jobs"], env_hook, tmp_path)
        assert stale.code == EXIT_FAILED, stale.describe()
        assert [line.split(":")[:2] for line in stale.lines()] == [
            ["stale", " projects"],
            ["stale", " jobs"],
        ], stale.describe()
        assert "ago (max 1s)" in stale.out, stale.describe()
        as_json = run_cli([*only, "--log-format", "json"], env_hook, tmp_path)
        assert wait_until(lambda: len(receiver.received()) == 2, 60)
    assert as_json.code == EXIT_FAILED, as_json.describe()
    (report,) = json_objects(as_json)
    assert report["event"] == "status" and report["stale"] is True, report
    assert set(report["tables"]) == set(ALL_TABLES), report
    assert all(row["age_seconds"] >= 1 for row in report["tables"].values()), report
    texts = [request.body["text"] for request in receiver.received()]
    assert all(str(database) in text and "stale" in text for text in texts), texts
    assert "projects" in texts[0] and "webhooks" not in texts[0], texts


def test_status_without_a_warehouse_is_stale_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process: its exit code for a monitor; the refused flag in this process."""
    env = cli_env(tmp_path)
    result = run_cli(["status", "--database", "nowhere.duckdb"], env, tmp_path)
    assert result.code == EXIT_FAILED, result.describe()
    assert "no sync has run there yet" in result.out, result.describe()
    assert not (tmp_path / "nowhere.duckdb").exists()
    assert not list(tmp_path.glob("nowhere*")), list(tmp_path.iterdir())
    bad = run_in_process(["status", "--max-age", "soon"], env, tmp_path, monkeypatch, capsys)
    assert bad.code == EXIT_CONFIG, bad.describe()
    assert bad.lines() == [bad.err.strip()] and "--max-age" in bad.err, bad.describe()


def test_status_of_a_warehouse_being_written_exits_75(
    tmp_path: Path, status_warehouse: tuple[Path, dict[str, str]]
) -> None:
    database, env = status_warehouse
    with held_for_writing(database) as holder:
        result = run_cli(["status", "--database", str(database)], env, tmp_path)
    assert result.code == EXIT_BUSY, result.describe()
    assert len(result.lines()) == 1 and str(holder.pid) in result.err, result.describe()


def test_failed_run_alert_names_the_cause_and_never_the_key(tmp_path: Path) -> None:
    key = f"canary-{secrets.token_hex(12)}"
    # the key in the API's URL path: every error that names the URL now carries it
    base_url = f"http://127.0.0.1:{closed_loopback_port()}/{key}"
    with running_receiver() as receiver:
        env = cli_env(tmp_path, base_url=base_url, api_key=key, extra={HOOK: receiver.url})
        result = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
        assert wait_until(lambda: receiver.received(), 60)
    assert result.code == EXIT_FAILED, result.describe()
    (alert,) = receiver.received()
    assert key not in alert.raw and key not in result.text, alert.raw
    text = alert.body["text"]
    assert str(tmp_path / "w.duckdb") in text, text
    assert "run id: 2" in text and "failed tables: projects" in text, text
    assert "cannot reach the API" in text and "<redacted>" in text, text


def test_undeliverable_alert_is_one_warning_and_keeps_the_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process: the exit code kept despite the alert; the refused hook in this process."""
    dead_hook = f"http://127.0.0.1:{closed_loopback_port()}/hook"
    env = cli_env(
        tmp_path,
        base_url=f"http://127.0.0.1:{closed_loopback_port()}",
        api_key="some-key",
        extra={HOOK: dead_hook},
    )
    result = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
    assert result.code == EXIT_FAILED, result.describe()
    assert TRACEBACK not in result.text, result.describe()
    warnings = [line for line in result.lines() if "alert not delivered" in line]
    assert len(warnings) == 1 and dead_hook not in result.text, result.describe()
    remote = cli_env(tmp_path, extra={HOOK: "http://hooks.example.com/T0/B0/x"})
    refused = run_in_process(run_args(tmp_path / "w.duckdb"), remote, tmp_path, monkeypatch, capsys)
    assert refused.code == EXIT_CONFIG, refused.describe()
    assert refused.lines() == [refused.err.strip()], refused.describe()
    assert "runtime.slack_incoming_hook" in refused.err and "/T0/B0/x" not in refused.err


def test_json_events_tell_the_run_as_it_goes(tmp_path: Path, shared_sim: SimulatorHandle) -> None:
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    args = run_args(tmp_path / "w.duckdb", "--log-format", "json", "--heartbeat", "0.05")
    result = run_cli(args, env, tmp_path)
    assert result.code == EXIT_OK, result.describe()
    events = [event for event in json_objects(result) if event["event"] != "log"]
    start, summary = events[0], events[-1]
    assert start["event"] == "start" and summary["event"] == "summary", events
    assert start["tables"] == list(ALL_TABLES) and start["warehouse"] == str(tmp_path / "w.duckdb")
    tables = [event for event in events if event["event"] == "table"]
    assert sorted(event["table"] for event in tables) == sorted(ALL_TABLES), tables
    assert {event["run_id"] for event in [*tables, summary]} == {start["run_id"]}
    times = [datetime.fromisoformat(event["ts"]) for event in tables]
    assert times == sorted(times) and times[0] < times[-1], "told as each group loads"
    beats = [event for event in events if event["event"] == "heartbeat"]
    assert beats and all(beat["run_id"] == start["run_id"] for beat in beats), events
    assert beats[-1]["rows_seen_total"] == sum(beats[-1]["rows_seen"].values()) > 0
    assert summary["error"] is None, summary
    # every line JSON, one summary and the last: what a scheduler reads
    assert summary_of(result) == summary
    assert (summary["outcome"], summary["exit_code"]) == ("success", 0), summary
    for key in ("requests", "retries", "seconds"):
        assert isinstance(summary[key], int | float), (key, summary)
    totals = summary["tables"]
    assert isinstance(totals, dict) and set(totals) == set(ALL_TABLES), summary
    for name, table in totals.items():
        assert set(table) >= TABLE_SUMMARY_KEYS, (name, table)
        assert table["status"] == "success", (name, table)
    assert totals["projects"]["new"] > 0, totals["projects"]


def test_json_summary_of_a_failed_run_names_the_root_cause(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key="a-wrong-but-well-formed-key")
    result = run_cli(run_args(tmp_path / "w.duckdb", "--log-format", "json"), env, tmp_path)
    summary = summary_of(result)
    assert (result.code, summary["outcome"]) == (EXIT_FAILED, "failed"), result.describe()
    assert summary["exit_code"] == 1, summary
    assert summary["error"], summary
    assert "401" in summary["error"] or "api_key" in summary["error"], summary


def parse_textfile(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A small reader of Prometheus' text format: every sample line, by name and labels; every
    other line a well-formed HELP or TYPE comment."""
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert line.split()[1] in ("HELP", "TYPE"), line
            continue
        head, value = line.rsplit(" ", 1)
        name, _, labels = head.partition("{")
        pairs = [pair.split("=", 1) for pair in labels.rstrip("}").split(",") if pair]
        key = frozenset((label, quoted.strip('"')) for label, quoted in pairs)
        assert (name, key) not in samples, line
        samples[(name, key)] = float(value)
    return samples


def test_metrics_textfile_keeps_last_success_of_failed_tables(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The warehouse is made, and the refused textfile name tried, in this process; the runs
    that write the textfile are processes."""
    database = tmp_path / "w.duckdb"
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    made = run_in_process(run_args(database), env, tmp_path, monkeypatch, capsys)
    assert made.code == EXIT_OK, made.describe()
    path = tmp_path / "textfile" / "drone_sync.prom"
    first = run_cli(run_args(database, "--metrics-file", str(path)), env, tmp_path)
    assert first.code == EXIT_OK, first.describe()
    ok = parse_textfile(path.read_text())
    table = lambda name: frozenset({("table", name)})  # noqa: E731
    assert ok[("drone_sync_last_run_ok", frozenset())] == 1
    rows_key = ("drone_sync_last_run_rows", frozenset({("table", "projects"), ("kind", "new")}))
    assert ok[rows_key] == 0
    assert ok[("drone_sync_last_run_requests", table("projects"))] > 0
    stamp = ok[("drone_sync_last_success_timestamp_seconds", table("projects"))]
    assert abs(stamp - time.time()) < 120
    failing = {**env, "SOURCES__DRONE_OPS__API_KEY": "a-wrong-but-well-formed-key"}
    failing["RUNTIME__METRICS_FILE"] = str(path)
    second = run_cli(run_args(database), failing, tmp_path)
    assert second.code == EXIT_FAILED, second.describe()
    after = parse_textfile(path.read_text())
    assert after[("drone_sync_last_run_ok", frozenset())] == 0
    for name in ALL_TABLES:
        key = ("drone_sync_last_success_timestamp_seconds", table(name))
        assert after[key] == ok[key], name
    assert sorted(p.name for p in path.parent.iterdir()) == ["drone_sync.prom"]
    bad_args = run_args(database, "--metrics-file", str(tmp_path / "m.txt"))
    bad = run_in_process(bad_args, env, tmp_path, monkeypatch, capsys)
    assert bad.code == EXIT_CONFIG and "--metrics-file" in bad.err, bad.describe()


def test_openlineage_events_start_and_complete(tmp_path: Path, shared_sim: SimulatorHandle) -> None:
    file = tmp_path / "lineage.jsonl"
    with running_receiver() as receiver:
        env = cli_env(
            tmp_path,
            base_url=shared_sim.base_url,
            api_key=shared_sim.read_key,
            extra={"OPENLINEAGE_URL": receiver.url, "OPENLINEAGE_FILE": str(file)},
        )
        result = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
        assert wait_until(lambda: len(receiver.received()) == 2, 60)
    assert result.code == EXIT_OK, result.describe()
    posted = receiver.received()
    assert {request.path for request in posted} == {"/api/v1/lineage"}
    start, complete = (request.body for request in posted)
    assert [json.loads(line) for line in file.read_text().splitlines()] == [start, complete]
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    assert start["run"]["runId"] == complete["run"]["runId"]
    uuid.UUID(start["run"]["runId"])
    assert complete["job"] == {"namespace": "drone-ops-sync", "name": "drone_sync.drone_ops"}
    assert {"namespace": shared_sim.base_url, "name": "/v1/projects"} in complete["inputs"]
    outputs = {output["name"]: output for output in complete["outputs"]}
    assert set(outputs) == {f"drone_ops.{name}" for name in ALL_TABLES}
    projects = outputs["drone_ops.projects"]["outputFacets"]["outputStatistics"]
    assert projects["rowCount"] > 0, outputs["drone_ops.projects"]
    assert all(shared_sim.read_key not in request.raw for request in posted)


def test_configuration_error_after_the_hook_is_read_is_alerted(tmp_path: Path) -> None:
    with running_receiver() as receiver:
        env = cli_env(tmp_path, api_key="some-key", extra={HOOK: receiver.url})
        result = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
        assert wait_until(lambda: receiver.received(), 60)
    assert result.code == EXIT_CONFIG, result.describe()
    text = receiver.received()[0].body["text"]
    assert "config_error" in text and "run id: none" in text, text
    assert "sources.drone_ops.base_url" in text, text


def test_status_reads_postgres(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    postgres_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The status of a dataset with no sync yet, and the load, in this process; the fresh
    status, what a monitor acts on, as a process."""
    env = cli_env(
        tmp_path,
        base_url=shared_sim.base_url,
        api_key=shared_sim.read_key,
        extra={"DESTINATION__POSTGRES__CREDENTIALS": postgres_dsn},
    )
    status = ["status", "--destination", "postgres", "--log-format", "json"]
    never = run_in_process(status, env, tmp_path, monkeypatch, capsys)
    assert never.code == EXIT_FAILED, never.describe()
    assert "no sync recorded" in json_objects(never)[0]["note"], never.describe()
    loaded = run_in_process(
        ["run", "--destination", "postgres", "--no-models"], env, tmp_path, monkeypatch, capsys
    )
    assert loaded.code == EXIT_OK, loaded.describe()
    fresh = run_cli(status, env, tmp_path)
    assert fresh.code == EXIT_OK, fresh.describe()
    (report,) = json_objects(fresh)
    assert report["warehouse"] == "postgres dataset drone_ops", report
    assert not any(row["stale"] for row in report["tables"].values()), report
