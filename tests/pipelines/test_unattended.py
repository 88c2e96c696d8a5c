"""`drone-sync` run unattended (cron, CI, an orchestrator): exit codes a scheduler can act on,
one-line configuration errors, no traceback, secrets nowhere, no traffic but the API's, one run
per warehouse, and logs a machine can read. Interruption by a signal at every moment of a run is
tests/pipelines/test_interrupt_e2e.py's; a closed stdout, test_closed_stdout_e2e.py's.

Every test drives the CLI with cwd=tmp_path and HOME inside it, configured through
SOURCES__DRONE_OPS__* variables, against the simulator over HTTP on 127.0.0.1: as a subprocess
where the process takes part (its exit code, HOME, dlt's folders, its connections), through
`cli.main` in this process (`run_in_process`) for the cases around it.

Exit codes: 0 success; 1 a table failed or was refused, or dbt failed; 2 configuration or usage
error; 75 warehouse busy; 130 SIGINT; 141 stdout closed; 143 SIGTERM.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from drone_ops_sync.pipelines.run.target import PIPELINE_HASH_LENGTH, PIPELINE_PREFIX, Target
from testkit.simulator_process import SimulatorHandle, running_simulator, stop_process

from .cli_helpers import (
    ALL_TABLES,
    EXIT_BUSY,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    HANG_GUARD_S,
    TRACEBACK,
    Background,
    Result,
    cli_env,
    closed_loopback_port,
    dead_pid,
    dlt_data_dir,
    meaningful_lines,
    names_pid,
    run_cli,
    run_in_process,
    sync_runs,
    table_counts,
    tree_snapshot,
    wait_until,
)
from .test_sync_e2e import assert_equals_api

pytestmark = pytest.mark.e2e

# dlt's global folder when no pipelines_dir is given: /var/dlt for root, else ~/.dlt (which
# is inside tmp_path here, because HOME is)
GLOBAL_DLT_PIPELINES = Path("/var/dlt/pipelines")
WAREHOUSE_PIPELINE = re.compile(rf"{PIPELINE_PREFIX}_.+_[0-9a-f]{{{PIPELINE_HASH_LENGTH}}}")
"""The name of one warehouse's pipeline folder (`Target.pipeline_name`)."""


def global_pipelines(*databases: Path) -> dict[str, int]:
    """What is under dlt's global pipelines folder that a run of these warehouses could have
    written: every `drone_ops*` entry except the folders of other warehouses' pipelines, which
    another process on a shared machine (a user's sync, another suite) may write meanwhile."""
    own = {Target(database=database).pipeline_name() for database in databases}

    def foreign(path: str) -> bool:
        top = Path(path).relative_to(GLOBAL_DLT_PIPELINES).parts[0]
        return WAREHOUSE_PIPELINE.fullmatch(top) is not None and top not in own

    snapshot = tree_snapshot(GLOBAL_DLT_PIPELINES, PIPELINE_PREFIX)
    return {path: mtime for path, mtime in snapshot.items() if not foreign(path)}


SUMMARY_HEADERS = ("seen", "new", "changed", "retired", "requests")
TABLE_SUMMARY_KEYS = {
    "status",
    "rows_seen",
    "new",
    "changed",
    "retired",
    "requests",
    "retries",
    "seconds",
}


@pytest.fixture(scope="module")
def shared_sim() -> Iterator[SimulatorHandle]:
    """A tiny workspace that no test here changes (each xdist worker starts its own)."""
    with running_simulator(seed=11, scale="tiny", admin=True) as handle:
        yield handle


def run_args(database: Path, *more: str) -> list[str]:
    return ["run", "--no-models", "--database", str(database), *more]


def startup_probe(tmp_path: Path) -> Background:
    """A run that only starts up: no base URL is set, so it exits 2 at its configuration check,
    after the same start as the run beside it (a fork of the CLI zygote, or an interpreter and
    its imports), before any request or lock. Started beside a run whose speed a test bounds,
    it pays that start-up on the same machine at the same moment, so the bound can be on the
    time beyond start-up (a few seconds on an idle machine, many times that on a runner shared
    with other work)."""
    folder = tmp_path / "startup-probe"
    folder.mkdir(exist_ok=True)
    return Background(run_args(folder / "w.duckdb"), cli_env(folder), folder, folder, "probe")


def startup_seconds(probe: Background) -> float:
    """How long the probe took, start to exit: the start-up of a run at that moment."""
    try:
        result = probe.wait(timeout=HANG_GUARD_S)
    finally:
        probe.stop()
    assert result.code == EXIT_CONFIG, result.describe()
    return result.seconds


def assert_no_traceback(result: Result) -> None:
    assert TRACEBACK not in result.text, result.describe()


def assert_one_line(result: Result) -> str:
    lines = result.lines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{result.describe()}"
    return lines[0]


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- 1. secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrap",
    ["{}\n", "{} ", "\t{}\r\n"],
    ids=["trailing-newline", "trailing-space", "tab-and-crlf"],
)
def test_key_with_surrounding_whitespace_is_stripped(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wrap: str,
) -> None:
    """Decision: whitespace around the key (a secrets file's newline, a pasted space) is
    stripped, and the key works (in this process; as a process, in
    `test_canary_key_appears_nowhere`)."""
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=wrap.format(shared_sim.read_key))
    result = run_in_process(["check"], env, tmp_path, monkeypatch, capsys)
    assert result.code == EXIT_OK, result.describe()
    assert_no_traceback(result)
    assert "read_only" in result.text, result.describe()


@pytest.mark.parametrize("inner", [" ", "\n", "\x01"], ids=["space", "newline", "control-01"])
def test_key_with_inner_whitespace_or_control_is_refused(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    inner: str,
) -> None:
    """Exit 2 before any request, one line naming the setting, the value never echoed (in
    this process; as a process, the malformed key of `test_canary_key_appears_nowhere`)."""
    left, right = f"left{secrets.token_hex(8)}", f"right{secrets.token_hex(8)}"
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=f"{left}{inner}{right}")
    for args in (run_args(tmp_path / "w.duckdb"), ["check"]):
        shared_sim.reset_stats()
        result = run_in_process(args, env, tmp_path, monkeypatch, capsys)
        assert result.code == EXIT_CONFIG, result.describe()
        assert_no_traceback(result)
        line = assert_one_line(result)
        assert "sources.drone_ops.api_key" in line, result.describe()
        assert left not in result.text and right not in result.text, result.describe()
        assert shared_sim.stats()["total"] == 0, f"requests were made: {shared_sim.stats()}"


@pytest.mark.slow
def test_canary_key_appears_nowhere(tmp_path: Path) -> None:
    """Plant recognisable keys (the right one with a trailing newline, a wrong but well-formed
    one, a malformed one), run failing and succeeding runs with -v, and find them nowhere:
    not in stdout or stderr, not in any file under tmp_path (DuckDB file, dlt state, trace,
    load packages, spill folders), not in any table."""
    marker = "SECRET-7f3a"
    canary = f"canary-{marker}-{secrets.token_hex(8)}"
    wrong = f"canary-{marker}-wrong-{secrets.token_hex(8)}"
    tail = f"tail{secrets.token_hex(8)}"
    malformed = f"canary-{marker}-{secrets.token_hex(4)}\x01{tail}"
    needles = [marker, tail]
    database = tmp_path / "w.duckdb"
    data_dir = tmp_path / "dlt_data"  # dlt's global folder, so it is searched too
    results: list[tuple[str, Result, int]] = []
    with running_simulator(
        seed=5, scale="tiny", admin=True, extra_args=("--read-key", canary)
    ) as sim:

        def env(key: str, **settings: str) -> dict[str, str]:
            return cli_env(
                tmp_path,
                base_url=sim.base_url,
                api_key=key,
                settings=settings,
                extra={"DLT_DATA_DIR": str(data_dir)},
            )

        verbose_run = ["-v", *run_args(database)]
        for what, args, key, expected in (
            ("wrong key, run", verbose_run, wrong, EXIT_FAILED),
            ("wrong key, check", ["-v", "check"], wrong, EXIT_FAILED),
            ("malformed key, run", verbose_run, malformed, EXIT_CONFIG),
            ("malformed key, check", ["-v", "check"], malformed, EXIT_CONFIG),
            ("right key + newline, run", verbose_run, canary + "\n", EXIT_OK),
            ("right key + newline, check", ["-v", "check"], canary + "\n", EXIT_OK),
        ):
            results.append((what, run_cli(args, env(key), tmp_path), expected))
        sim.set_faults("503:1.0")
        try:
            failing = run_cli(
                [*verbose_run, "--log-format", "json"],
                env(canary + "\n", RETRY_BUDGET_SECONDS="1", MAX_ATTEMPTS="2"),
                tmp_path,
            )
            results.append(("right key, API failing, json logs", failing, EXIT_FAILED))
        finally:
            sim.set_faults(None)

    def found(haystack: str) -> list[str]:
        return [n for n in needles if n.lower() in haystack.lower()]

    for what, result, _ in results:
        assert not found(result.out), f"key in stdout of {what}:\n{result.describe()}"
        assert not found(result.err), f"key in stderr of {what}:\n{result.describe()}"
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    for path in files:
        content = path.read_bytes().lower()
        leaked = [n for n in needles if n.lower().encode() in content]
        assert not leaked, f"key found in {path}"
    scanned_tables: list[str] = []
    if database.exists():
        con = duckdb.connect(str(database), read_only=True)
        try:
            tables = con.execute(
                "SELECT table_schema, table_name FROM information_schema.tables"
            ).fetchall()
            for schema, table in tables:
                rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
                assert not found(repr(rows)), f"key found in table {schema}.{table}"
                scanned_tables.append(table)
        finally:
            con.close()
    # the search above meant something: the runs ran, and wrote what could have held the key
    for what, result, expected in results:
        assert result.code == expected, f"{what}:\n{result.describe()}"
        assert_no_traceback(result)
    assert "_sync_runs" in scanned_tables, scanned_tables
    assert any("trace" in p.name for p in files), "the dlt trace was written and searched"
    assert any("state" in p.name for p in files), "the dlt state was written and searched"


# --- 2. no traffic but the API's -------------------------------------------------------------


def test_run_and_check_talk_to_nothing_but_the_api(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """Every connection attempt to a host that is not loopback is logged and refused by
    netguard/sitecustomize.py; a run and a check leave the log empty (dlt's telemetry off)."""
    log = tmp_path / "foreign-connections.log"
    env = cli_env(
        tmp_path,
        base_url=shared_sim.base_url,
        api_key=shared_sim.read_key,
        netguard_log=log,
        extra={"DESTINATION__DUCKDB__CREDENTIALS": str(tmp_path / "w.duckdb")},
    )
    run = run_cli(["run", "--no-models"], env, tmp_path)
    check = run_cli(["check"], env, tmp_path)
    time.sleep(0.5)
    attempts = log.read_text() if log.exists() else ""
    assert attempts == "", f"connections to foreign hosts:\n{attempts}"
    assert run.code == EXIT_OK, run.describe()
    assert check.code == EXIT_OK, check.describe()
    assert (tmp_path / "w.duckdb").exists(), "the run used DESTINATION__DUCKDB__CREDENTIALS"


def test_netguard_sees_dlt_telemetry_when_it_is_turned_on(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """The guard can fail: with dlt's telemetry explicitly on (RUNTIME__DLTHUB_TELEMETRY=true),
    the same run tries to reach dlt's telemetry host and the guard records it (dlt resolves
    the host in a background thread while the run goes on, so getaddrinfo counts)."""
    log = tmp_path / "foreign-connections.log"
    env = cli_env(
        tmp_path,
        base_url=shared_sim.base_url,
        api_key=shared_sim.read_key,
        netguard_log=log,
        extra={"RUNTIME__DLTHUB_TELEMETRY": "true"},
    )
    run = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
    assert run.code == EXIT_OK, run.describe()
    wait_until(log.exists, 2)
    attempts = log.read_text() if log.exists() else ""
    assert attempts.strip(), "the guard recorded no foreign connection attempt"
    assert "127.0.0.1" not in attempts, attempts


# --- 3. one run per warehouse ----------------------------------------------------------------


@pytest.mark.slow
def test_second_run_on_a_busy_warehouse_exits_75_and_changes_nothing(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """The first run's requests are held at the simulator's gate, so it is certainly in its
    walk, holding the warehouse, while the second run starts and ends; then the gate opens."""
    database = tmp_path / "w.duckdb"
    lock = Path(f"{database}.lock")
    sim = shared_sim
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    sim.set_gate(True)
    try:
        first = Background(run_args(database), env, tmp_path, tmp_path / "logs", "first")
    except BaseException:
        sim.set_gate(False)
        raise
    try:
        try:
            started = wait_until(
                lambda: not first.running() or (sim.gate()["held"] >= 1 and database.exists()),
                HANG_GUARD_S,
            )
            assert started and first.running(), "the first run did not get to its walk"
            probe = startup_probe(tmp_path)
            second = run_cli(run_args(database), env, tmp_path)
            first_still_running = first.running()
            startup = startup_seconds(probe)
            assert second.code == EXIT_BUSY, second.describe()
            # "within ~5 s" of its start-up (the interpreter's start and imports: ~2 s idle);
            # that it did not wait for the first run is proven by first_still_running below
            assert second.seconds <= startup + 5, (
                f"took {second.seconds:.1f}s, start-up {startup:.1f}s:\n{second.describe()}"
            )
            assert_no_traceback(second)
            assert names_pid(second.text, first.pid), (
                f"no line names the first run's pid {first.pid}:\n{second.describe()}"
            )
            assert first_still_running, "the first run had ended: the test proved nothing"
            assert lock.exists(), "the lock file is the warehouse path plus .lock"
        finally:
            sim.set_gate(False)
        done = first.wait(timeout=HANG_GUARD_S)
    finally:
        first.stop()
    assert done.code == EXIT_OK, done.describe()
    assert_no_traceback(done)
    runs = sync_runs(database)
    assert {row["run_id"] for row in runs} == {runs[0]["run_id"]}, "only the first run wrote"
    assert sorted(row["resource"] for row in runs) == sorted(ALL_TABLES)
    assert {row["status"] for row in runs} == {"success"}
    assert_equals_api(sim, Target(database=database))
    # released: the file may stay (emptied), but it no longer names the finished run
    assert not lock.exists() or str(first.pid) not in lock.read_text(), lock.read_text()


def test_stale_lock_of_a_dead_process_is_taken_over(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    database = tmp_path / "w.duckdb"
    lock = Path(f"{database}.lock")
    dead = dead_pid()
    lock.write_text(
        json.dumps(
            {
                "pid": dead,
                "host": socket.gethostname(),
                "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
    )
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    result = run_cli(run_args(database), env, tmp_path)
    assert result.code == EXIT_OK, result.describe()
    assert_no_traceback(result)
    assert not lock.exists() or str(dead) not in lock.read_text(), "the stale lock remains"
    assert {row["status"] for row in sync_runs(database)} == {"success"}
    assert_summary_on_a_pipe_is_not_truncated(env, result)


def assert_summary_on_a_pipe_is_not_truncated(env: dict[str, str], result: Result) -> None:
    """The text summary of a run whose stdout is a pipe (no terminal, no COLUMNS): every table
    and every header in full, nothing cut to a terminal's width."""
    assert "COLUMNS" not in env
    assert "…" not in result.text, result.describe()
    for word in (*ALL_TABLES, *SUMMARY_HEADERS):
        assert re.search(rf"\b{word}\b", result.out), f"{word} missing:\n{result.describe()}"


# --- 4. the DuckDB file open in another process -------------------------------------------------

HOLDER = """
import pathlib, sys, time
import duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "read_only")
con.execute("SELECT 1").fetchall()
pathlib.Path(sys.argv[3]).write_text("ready")
time.sleep(300)
"""


@pytest.mark.slow
def test_warehouse_open_in_another_process_exits_75_naming_it(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Held read-only, then read-write, by another process: `run` as a process (its exit code
    as a scheduler sees it) and `models` in this process are refused with exit 75 naming the
    holder, and change nothing. The runs that make the warehouse and use it once the holder
    is gone run in this process: the process takes no part in them."""
    database = tmp_path / "w.duckdb"
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    first = run_in_process(run_args(database), env, tmp_path, monkeypatch, capsys)
    assert first.code == EXIT_OK, first.describe()
    before = table_counts(database)
    for mode in ("read_only", "read_write"):
        ready = tmp_path / f"holder-{mode}.ready"
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(database), mode, str(ready)],
            stdin=subprocess.DEVNULL,
        )
        try:
            assert wait_until(ready.exists, 60), f"the holder ({mode}) did not open the file"
            for result in (
                run_cli(run_args(database), env, tmp_path),
                run_in_process(
                    ["models", "--database", str(database)], env, tmp_path, monkeypatch, capsys
                ),
            ):
                assert result.code == EXIT_BUSY, f"{mode}: {result.describe()}"
                assert_no_traceback(result)
                assert names_pid(result.text, holder.pid), (
                    f"the holder's ({mode}) pid {holder.pid} is not named:\n{result.describe()}"
                )
                assert "close" in result.text.lower(), result.describe()
        finally:
            stop_process(holder)
        assert table_counts(database) == before, mode
    rerun = run_in_process(run_args(database), env, tmp_path, monkeypatch, capsys)
    assert rerun.code == EXIT_OK, rerun.describe()


# --- 5. bad settings and flags ---------------------------------------------------------------

BAD_SETTINGS: list[tuple[str, str | None]] = [
    ("MAX_WORKERS", "abc"),
    ("MAX_WORKERS", "0"),
    ("MAX_WORKERS", "1000"),
    ("MAX_REQUESTS_PER_SECOND", "fast"),
    ("MAX_REQUESTS_PER_SECOND", "-1"),
    ("MAX_RETIRE_SHARE", "2"),
    ("MAX_RETIRE_SHARE", "abc"),
    ("MAX_RETIRE_SHARE", "0"),
    ("DELIVERY_OVERLAP_SECONDS", "-5"),
    ("DELIVERY_OVERLAP_SECONDS", "x"),
    ("MAX_ATTEMPTS", "0"),
    ("MAX_ATTEMPTS", "y"),
    ("RETRY_BUDGET_SECONDS", "-1"),
    ("RETRY_BUDGET_SECONDS", "z"),
    ("TIMEOUT_SECONDS", "0"),
    ("TIMEOUT_SECONDS", "w"),
    ("JOB_REFRESH_SLICES", "0"),
    ("JOB_REFRESH_SLICES", "1.5"),
    ("JOB_REFRESH_SLICES", "many"),
    ("WEBHOOK_IDS", "wh_x"),
    ("WEBHOOK_IDS", "[1,2]"),
    ("WEBHOOK_IDS", "{}"),
    ("JOBS_PATH", "/v1/projects/{projectId}/jobs"),
    ("JOBS_PATH", "v1/projects/{project_id}/jobs"),
    ("JOBS_PATH", "/v1/projects/{project_id}/jobs/{other}"),
    ("BASE_URL", "ftp://x"),
    ("BASE_URL", "http://example.com"),
    ("BASE_URL", "not a url"),
    ("BASE_URL", ""),
    ("API_KEY", ""),
    ("API_KEY", None),
]


def bad_setting_id(name: str, value: str | None) -> str:
    return f"{name}={'<unset>' if value is None else repr(value)}"


def assert_bad_setting_line(result: Result, name: str, value: str | None) -> None:
    """Exit 2, no traceback, one line naming the setting and (except for the key) its value."""
    assert result.code == EXIT_CONFIG, result.describe()
    assert_no_traceback(result)
    line = assert_one_line(result)
    assert f"sources.drone_ops.{name.lower()}" in line, result.describe()
    if name == "BASE_URL" and value == "not a url":
        # a value that is no URL at all may be a key pasted into the wrong setting
        assert "value not shown" in line, result.describe()
    elif name != "API_KEY" and value:
        assert squeeze(value) in squeeze(line), f"{value!r} not named: {result.describe()}"


@pytest.mark.parametrize(
    ("name", "value"), BAD_SETTINGS, ids=[bad_setting_id(n, v) for n, v in BAD_SETTINGS]
)
def test_bad_setting_exits_2_with_one_line(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    value: str | None,
) -> None:
    """`run` and `check` validate the same settings before any request, and say in one line
    which setting is wrong and (except for the key) what it holds. In this process: what a
    process adds (its start, its exit, HOME, dlt's folders, other hosts) is the same for every
    setting, and `test_a_bad_setting_process_writes_nothing_and_calls_nobody` holds it."""
    env = cli_env(
        tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key, settings={name: value}
    )
    database = tmp_path / "w.duckdb"
    global_before = global_pipelines(database)
    for args in (run_args(database), ["check"]):
        shared_sim.reset_stats()
        result = run_in_process(args, env, tmp_path, monkeypatch, capsys)
        assert_bad_setting_line(result, name, value)
        assert shared_sim.stats()["total"] == 0, f"{args[0]} made requests: {shared_sim.stats()}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"], "a run wrote files"
    assert list((tmp_path / "home").iterdir()) == [], "something was written to HOME"
    assert global_pipelines(database) == global_before, (
        f"a pipeline folder was created or changed under {GLOBAL_DLT_PIPELINES}"
    )


BAD_SETTINGS_IN_A_PROCESS = [
    ("MAX_WORKERS", "abc"),
    ("WEBHOOK_IDS", "[1,2]"),
    ("BASE_URL", "not a url"),
    ("API_KEY", None),
]
"""One setting of each kind (a sync setting, a list, the URL, the key): the process around
a refused setting is the same whichever it is."""


@pytest.mark.parametrize(
    ("name", "value"),
    BAD_SETTINGS_IN_A_PROCESS,
    ids=[bad_setting_id(n, v) for n, v in BAD_SETTINGS_IN_A_PROCESS],
)
def test_a_bad_setting_process_writes_nothing_and_calls_nobody(
    tmp_path: Path, shared_sim: SimulatorHandle, name: str, value: str | None
) -> None:
    """`drone-sync run` and `check` as processes: the same line and exit 2, no request, no
    connection to any other host, nothing written to HOME, dlt's data folder or its global
    pipelines folder."""
    log = tmp_path / "foreign-connections.log"
    env = cli_env(
        tmp_path,
        base_url=shared_sim.base_url,
        api_key=shared_sim.read_key,
        settings={name: value},
        netguard_log=log,
    )
    databases = [tmp_path / "w.duckdb"]
    global_before = global_pipelines(*databases)
    for args in (run_args(tmp_path / "w.duckdb"), ["check"]):
        shared_sim.reset_stats()
        result = run_cli(args, env, tmp_path)
        assert_bad_setting_line(result, name, value)
        assert shared_sim.stats()["total"] == 0, f"{args[0]} made requests: {shared_sim.stats()}"
    attempts = log.read_text() if log.exists() else ""
    assert attempts == "", f"connections to foreign hosts:\n{attempts}"
    assert list((tmp_path / "home").iterdir()) == [], "something was written to HOME"
    assert not dlt_data_dir(tmp_path).exists(), "something was written to dlt's data folder"
    assert global_pipelines(*databases) == global_before, (
        f"a pipeline folder was created or changed under {GLOBAL_DLT_PIPELINES}"
    )


# (id, flags, what the line must name: each entry is a tuple of alternatives)
BAD_FLAGS: list[tuple[str, list[str], list[tuple[str, ...]]]] = [
    ("resources-unknown", ["--resources", "nope"], [("--resources",), ("nope",)]),
    ("resources-empty-item", ["--resources", "projects,,nope"], [("--resources",), ("nope",)]),
    (
        "destination-unknown",
        ["--destination", "nosuchdest"],
        [("--destination",), ("nosuchdest",)],
    ),
    (
        "destination-postgres-unconfigured",
        ["--destination", "postgres"],
        [("destination.postgres.credentials", "psycopg")],
    ),
    (
        "database-under-a-file",
        ["--database", "{file}/w.duckdb"],
        [("--database",), ("{file}/w.duckdb",)],
    ),
    ("database-is-a-directory", ["--database", "{dir}"], [("--database",), ("{dir}",)]),
    ("dataset-bad-name", ["--dataset", "bad name;"], [("--dataset",), ("bad name;",)]),
    ("log-format-xml", ["--log-format", "xml"], [("--log-format",), ("xml",)]),
    ("unknown-flag", ["--frobnicate"], [("--frobnicate",)]),
]


BAD_FLAGS_IN_A_PROCESS = {"destination-postgres-unconfigured", "database-under-a-file"}
"""The two refused furthest into a run (a destination's credentials, a folder to make): also
run as a process, whose HOME and dlt's folders must stay untouched."""


@pytest.mark.parametrize(
    ("flags", "named", "process"),
    [(f, n, i in BAD_FLAGS_IN_A_PROCESS) for i, f, n in BAD_FLAGS],
    ids=[i for i, _, _ in BAD_FLAGS],
)
def test_bad_flag_exits_2_with_one_line(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    named: list[tuple[str, ...]],
    process: bool,
) -> None:
    plain_file = tmp_path / "plain-file"
    plain_file.write_text("not a folder")
    directory = tmp_path / "a-directory"
    directory.mkdir()

    def fill(text: str) -> str:
        return text.format(file=plain_file, dir=directory)

    flags = [fill(flag) for flag in flags]
    args = ["run", "--no-models", *flags]
    if not {"--database", "--destination"} & set(flags):
        args += ["--database", str(tmp_path / "w.duckdb")]
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    databases = [Path(args[i + 1]) for i, arg in enumerate(args[:-1]) if arg == "--database"]
    global_before = global_pipelines(*databases)
    runs = [run_in_process]
    if process:
        runs.append(lambda args, env, cwd, *_: run_cli(args, env, cwd))
    for run in runs:
        shared_sim.reset_stats()
        result = run(args, env, tmp_path, monkeypatch, capsys)
        assert result.code == EXIT_CONFIG, result.describe()
        assert_no_traceback(result)
        line = assert_one_line(result)
        for alternatives in named:
            assert any(squeeze(fill(a)) in squeeze(line) for a in alternatives), (
                f"none of {alternatives} named:\n{result.describe()}"
            )
        assert shared_sim.stats()["total"] == 0, f"requests were made: {shared_sim.stats()}"
        assert list((tmp_path / "home").iterdir()) == [], "something was written to HOME"
        assert not dlt_data_dir(tmp_path).exists(), "something was written to dlt's data folder"
        assert global_pipelines(*databases) == global_before, (
            f"a pipeline folder was created or changed under {GLOBAL_DLT_PIPELINES}"
        )


# --- 6. unreachable API ----------------------------------------------------------------------


def test_unreachable_api_fails_fast_naming_the_url(tmp_path: Path) -> None:
    base_url = f"http://127.0.0.1:{closed_loopback_port()}"
    env = cli_env(tmp_path, base_url=base_url, api_key="some-key")
    probe = startup_probe(tmp_path)
    run = run_cli(run_args(tmp_path / "w.duckdb"), env, tmp_path)
    startup = startup_seconds(probe)
    assert run.code == EXIT_FAILED, run.describe()
    # 15 s in all on an idle machine, ~2 s of it the start-up: 13 s beyond start-up
    assert run.seconds <= startup + 13, (
        f"took {run.seconds:.1f}s, start-up {startup:.1f}s:\n{run.describe()}"
    )
    assert_no_traceback(run)
    assert base_url in run.text, run.describe()
    assert re.search(r"reach", run.text, re.IGNORECASE), run.describe()
    warnings = [line for line in run.lines() if "WARNING" in line]
    assert len(warnings) <= 3, run.describe()
    probe = startup_probe(tmp_path)
    check = run_cli(["check"], env, tmp_path)
    startup = startup_seconds(probe)
    assert check.code == EXIT_FAILED, check.describe()
    # 10 s in all on an idle machine, ~2 s of it the start-up: 8 s beyond start-up
    assert check.seconds <= startup + 8, (
        f"took {check.seconds:.1f}s, start-up {startup:.1f}s:\n{check.describe()}"
    )
    assert_no_traceback(check)
    assert_one_line(check)


# --- 7. logs for schedulers (a JSON run's events: test_observe_e2e.py) ---------------------------


def json_lines(text: str, stream: str) -> list[dict[str, Any]]:
    objects = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            pytest.fail(f"{stream} line is not JSON: {line!r}\n{text[-3000:]}")
        assert isinstance(obj, dict) and "event" in obj, f"{stream}: {line!r}"
        objects.append(obj)
    return objects


def summary_of(result: Result) -> dict[str, Any]:
    objects = json_lines(result.out, "stdout")
    if result.err.strip():
        json_lines(result.err, "stderr")
    summaries = [obj for obj in objects if obj["event"] == "summary"]
    assert len(summaries) == 1, result.describe()
    assert objects[-1] is summaries[0], "the summary is the final object"
    return summaries[0]


def test_helpers_read_output_as_a_person_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-line rule ignores blank lines and surrounding whitespace; a pid is a whole
    number on a line that says pid; no terminal width reaches a run."""
    assert meaningful_lines("\n  error: x  \n\n") == ["error: x"]
    assert names_pid("busy: held by PID 1234 since 10:00", 1234)
    assert not names_pid("busy: held by pid 12345", 1234)
    monkeypatch.setenv("COLUMNS", "40")
    assert "COLUMNS" not in cli_env(tmp_path)
