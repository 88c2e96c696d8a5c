"""Mistakes an operator makes, each answered with one line and a documented exit code
(docs/operations.md, "Common mistakes"): a global output option written before the command, a
TOML file that does not parse, the example's placeholder key, a refused key (and an API that
is down: one cause, one line), a misspelled setting, and
`status` / `check` on a warehouse the user may only read. Every case runs `drone-sync` as a
subprocess in the test's own folder (the read-only warehouse's commands one after another in one
reader process), against the simulator over HTTP on 127.0.0.1 where a request is made."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.cli_parser import build_parser
from drone_ops_sync.pipelines.project_init import starter_text
from drone_ops_sync.sources.drone_ops.settings import API_KEY_PLACEHOLDER
from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import (
    ALL_TABLES,
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    HANG_GUARD_S,
    REPO,
    TRACEBACK,
    Result,
    cli_env,
    run_cli,
    run_command,
    run_in_process,
    tree_snapshot,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def shared_sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=11, scale="tiny", admin=True) as handle:
        yield handle


def one_line(result: Result) -> str:
    lines = result.lines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{result.describe()}"
    assert TRACEBACK not in result.text, result.describe()
    return lines[0]


def json_objects(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- 1. global output options -------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "status", "check", "models", "listen"])
def test_output_options_are_honoured_before_and_after_the_command(command: str) -> None:
    """`drone-sync --log-format json run` (as the top-level --help lists it) is the same as
    `drone-sync run --log-format json`; when both are given, the command's own wins."""
    parser = build_parser(with_sim=False)
    before = parser.parse_args(["--log-format", "json", "-v", command])
    assert (before.log_format, before.verbose) == ("json", True)
    after = parser.parse_args([command, "--log-format", "json", "-v"])
    assert (after.log_format, after.verbose) == ("json", True)
    neither = parser.parse_args([command])
    assert (neither.log_format, neither.verbose) == (None, False)
    both = parser.parse_args(["--log-format", "json", command, "--log-format", "text"])
    assert both.log_format == "text"
    for strict in (["--strict-settings", command], [command, "--strict-settings"]):
        assert parser.parse_args(strict).strict_settings is True
    assert neither.strict_settings is False


def test_global_log_format_reaches_the_run(tmp_path: Path) -> None:
    """The global option written first gives JSON lines on stdout (here a configuration
    error's `error` and `summary` objects), not the text line it used to give."""
    env = cli_env(tmp_path, base_url="http://127.0.0.1:9", api_key=None)
    result = run_cli(["--log-format", "json", "run", "--no-models"], env, tmp_path)
    assert result.code == EXIT_CONFIG, result.describe()
    objects = json_objects(result.out)
    assert [obj["event"] for obj in objects] == ["error", "summary"], result.describe()
    assert objects[-1]["outcome"] == "config_error", result.describe()
    assert not result.err.strip(), result.describe()


# --- 2. a TOML file that does not parse -----------------------------------------------------


@pytest.mark.parametrize(
    ("command", "file_name"),
    [
        (["check"], "config.toml"),
        (["run", "--no-models"], "config.toml"),
        (["status"], "config.toml"),
        (["check"], "secrets.toml"),
    ],
    ids=["check-config", "run-config", "status-config", "check-secrets"],
)
def test_unparsable_toml_is_one_line_naming_file_line_and_column(
    tmp_path: Path, file_name: str, command: list[str]
) -> None:
    """An unclosed quote: one line naming the file, its line and column, exit 2 (it used to
    be dlt's 83-line traceback and exit 1). Each command that reads the settings, and the
    secrets file once: dlt parses both files alike."""
    work = tmp_path / "project"
    (work / ".dlt").mkdir(parents=True)
    (work / ".dlt" / file_name).write_text(
        '[sources.drone_ops]\nmax_workers = 4\nbase_url = "http://127.0.0.1:9\n'
    )
    env = cli_env(tmp_path, base_url="http://127.0.0.1:9", api_key="k" * 20)
    result = run_cli(command, env, work, timeout=60)
    assert result.code == EXIT_CONFIG, result.describe()
    line = one_line(result)
    assert line.startswith("drone-sync: configuration error: "), line
    assert f".dlt/{file_name}: line 3, column " in line, line
    assert "closing quote" in line, line


# --- 3. the example's placeholder key, a refused key ---------------------------------------


def test_example_secrets_file_holds_the_placeholder_the_code_recognises() -> None:
    """The example files' and the starter's text is the constant the check recognises (one
    definition, in code), so every way a user starts gets the placeholder message."""
    example = (REPO / ".dlt" / "secrets.toml.example").read_text()
    assert f'api_key = "{API_KEY_PLACEHOLDER}"' in example
    systemd = (REPO / "deploy" / "systemd" / "drone-sync.env.example").read_text()
    assert f'SOURCES__DRONE_OPS__API_KEY="{API_KEY_PLACEHOLDER}"' in systemd
    # `drone-sync init`'s starter secrets file, from the installed package's data
    assert f'api_key = "{API_KEY_PLACEHOLDER}"' in starter_text("secrets.toml")


def test_unedited_example_secrets_say_the_key_is_the_placeholder(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """secrets.toml copied from the example and not edited: exit 2, one line saying the key
    is still the placeholder and where the real one goes; no request is made."""
    work = tmp_path / "project"
    (work / ".dlt").mkdir(parents=True)
    shutil.copy(REPO / ".dlt" / "secrets.toml.example", work / ".dlt" / "secrets.toml")
    env = cli_env(tmp_path, base_url=shared_sim.base_url)
    shared_sim.reset_stats()
    result = run_cli(["check"], env, work, timeout=60)
    assert result.code == EXIT_CONFIG, result.describe()
    line = one_line(result)
    assert "sources.drone_ops.api_key" in line and "placeholder" in line, line
    assert ".dlt/secrets.toml" in line and "SOURCES__DRONE_OPS__API_KEY" in line, line
    assert shared_sim.stats()["total"] == 0


@pytest.mark.parametrize("cause", ["401", "503"], ids=["refused-key", "api-down"])
def test_a_cause_every_table_shares_is_one_line(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cause: str,
) -> None:
    """A wrong key is refused on every endpoint, and an API that is down fails every endpoint
    alike: `run` names that cause once, with every table and the first endpoint (it used to
    print one line per endpoint), and the JSON summary's `error` is that cause. In this
    process: what is said, not the process, is the point (a failed run's exit code as a
    process: test_unattended.py's `test_canary_key_appears_nowhere`, a wrong key and 503s)."""
    with contextlib.ExitStack() as stack:
        if cause == "401":
            env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key="wrong-key-" * 3)
        else:
            down = stack.enter_context(running_simulator(seed=11, scale="tiny", faults="503:1"))
            env = cli_env(
                tmp_path,
                base_url=down.base_url,
                api_key=down.read_key,
                settings={"MAX_ATTEMPTS": "1"},
            )
        args = ["run", "--no-models", "--database", "w.duckdb"]
        result = run_in_process(args, env, tmp_path, monkeypatch, capsys)
        as_json = run_in_process(
            ["--log-format", "json", *args], env, tmp_path, monkeypatch, capsys
        )
    assert result.code == as_json.code == EXIT_FAILED, result.describe()
    assert TRACEBACK not in result.text, result.describe()
    told = [line for line in result.lines() if f" {cause} " in line or f"({cause} " in line]
    assert len(told) == 1, f"the cause on {len(told)} lines:\n{result.describe()}"
    assert told[0].startswith(", ".join(ALL_TABLES) + ": GET /v1/projects (and "), told
    summary = json_objects(as_json.out)[-1]
    assert summary["event"] == "summary" and cause in summary["error"], as_json.describe()


# --- 4. a misspelled setting ----------------------------------------------------------------


MISSPELLED_CONFIG = """\
[runtime]
log_level = "WARNING"
metrics_fil = "run.prom"

[sources.drone_ops]
max_worker = 4

[sources.drone_ops.workspaces.acme]
base_url = "{base_url}"
timeout_secs = 5

[sources.drone_ops.workspace.north]
base_url = "{base_url}"

[sources.drone_op]
max_workers = 2

[sources.github]
access_token_note = "another dlt source in the same file: not ours to judge"

[destination.duckdb]
memory_limt = "1GB"
threads = 1
bi_snapshot_sync_runs = true

[destinaton.postgres]
credentials = "postgresql://loader@127.0.0.1:5432/dw"
"""
MISSPELLED_SECRETS = """\
[sources.drone_ops]
webhook_secret = "whsec_bm90LXJlYWQtYnktY2hlY2s="

[sources.drone_ops.workspaces.acme]
api_key = "{api_key}"

[destination.postgres.credentials]
host = "127.0.0.1"
pasword = "{password}"
"""
PASSWORD = "pw-never-shown-8c1e"
# what each misspelling is called, where, and the closest valid name
EXPECTED_WARNINGS = {
    "sources.drone_ops.max_worker ": ("config.toml", "sources.drone_ops.max_workers?"),
    "sources.drone_ops.workspaces.acme.timeout_secs ": (
        "config.toml",
        "sources.drone_ops.workspaces.acme.timeout_seconds?",
    ),
    "[sources.drone_ops.workspace] ": ("config.toml", "[sources.drone_ops.workspaces]?"),
    "[sources.drone_op] ": ("config.toml", "[sources.drone_ops]?"),
    "runtime.metrics_fil ": ("config.toml", "runtime.metrics_file?"),
    "destination.duckdb.memory_limt ": ("config.toml", "destination.duckdb.memory_limit?"),
    "[destinaton] ": ("config.toml", "[destination]?"),
    "destination.postgres.credentials.pasword ": (
        "secrets.toml",
        "destination.postgres.credentials.password?",
    ),
    "SOURCES__DRONE_OPS__RETRY_BUDGET ": (
        "the environment",
        "SOURCES__DRONE_OPS__RETRY_BUDGET_SECONDS?",
    ),
    "DESTINATION__DUCKDB__MEMORY_LIMT ": (
        "the environment",
        "DESTINATION__DUCKDB__MEMORY_LIMIT?",
    ),
    "SOURCES__DRONE_OP__TIMEOUT_SECONDS ": (
        "the environment",
        "SOURCES__DRONE_OPS__TIMEOUT_SECONDS?",
    ),
    "DESTINATION__DUCKDB__CREDENTIALS__DATABSE ": (
        "the environment",
        "DESTINATION__DUCKDB__CREDENTIALS__DATABASE?",
    ),
}


def misspelled_project(tmp_path: Path, sim: SimulatorHandle) -> tuple[Path, dict[str, str]]:
    """A project whose .dlt/ files and environment misspell a key or a section in each place
    drone-sync or dlt reads one, beside valid settings of ours and dlt's and another source's
    section (none of which may warn)."""
    work = tmp_path / "project"
    (work / ".dlt").mkdir(parents=True)
    (work / ".dlt" / "config.toml").write_text(MISSPELLED_CONFIG.format(base_url=sim.base_url))
    (work / ".dlt" / "secrets.toml").write_text(
        MISSPELLED_SECRETS.format(api_key=sim.read_key, password=PASSWORD)
    )
    env = cli_env(
        tmp_path,
        base_url=sim.base_url,
        api_key=sim.read_key,
        settings={"RETRY_BUDGET": "30"},
        extra={
            "DESTINATION__DUCKDB__MEMORY_LIMT": "1GB",
            "DESTINATION__DUCKDB__CREDENTIALS__DATABSE": "elsewhere.duckdb",
            "DESTINATION__DUCKDB__THREADS": "1",
            "SOURCES__DRONE_OP__TIMEOUT_SECONDS": "5",
            "RUNTIME__DLTHUB_TELEMETRY": "false",
        },
    )
    return work, env


def test_misspelled_settings_warn_once_naming_the_closest_name(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """Each misspelled key or section, in `.dlt/config.toml`, `.dlt/secrets.toml` or the
    environment, under the source's section, a named workspace's, a destination's (its
    credentials too) or `[runtime]`: one warning naming it as written, where, and the closest
    valid name; the command's exit code is unchanged and no secret's value is shown. Before,
    only the source's own keys were named: a misspelled section, destination key or variable
    was ignored without a word."""
    work, env = misspelled_project(tmp_path, shared_sim)
    result = run_cli(["check"], env, work, timeout=60)
    assert result.code == EXIT_OK, result.describe()
    assert TRACEBACK not in result.text and PASSWORD not in result.text
    warnings = [line for line in result.err.splitlines() if "unknown " in line]
    for name, (where, closest) in EXPECTED_WARNINGS.items():
        said = [
            line
            for line in warnings
            if f"unknown setting {name}" in line or f"section {name}" in line
        ]
        assert len(said) == 1, f"{name}: {said}\n{result.describe()}"
        assert f" in {where if where == 'the environment' else '.dlt/' + where} " in said[0], said
        assert said[0].endswith(f"is ignored; did you mean {closest}"), said
    assert len(warnings) == len(EXPECTED_WARNINGS), "\n".join(warnings)

    as_json = run_cli(["status", "--log-format", "json"], env, work, timeout=60)
    logs = [
        obj
        for obj in json_objects(as_json.out)
        if obj["event"] == "log" and "unknown " in obj["message"]
    ]
    assert len(logs) == len(EXPECTED_WARNINGS), as_json.describe()
    assert {obj["level"] for obj in logs} == {"WARNING"}, as_json.describe()


def test_strict_settings_refuse_what_would_be_ignored(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """`--strict-settings` (before or after the command) or DRONE_SYNC_STRICT_SETTINGS=1: the
    same names, then one configuration error, exit 2, before any request or write; a project
    without a misspelling passes."""
    work, env = misspelled_project(tmp_path, shared_sim)
    shared_sim.reset_stats()
    for args, extra, named in (
        (["--strict-settings", "check"], {}, "--strict-settings"),
        (
            ["run", "--strict-settings", "--database", str(tmp_path / "w.duckdb")],
            {},
            "--strict-settings",
        ),
        (["status"], {"DRONE_SYNC_STRICT_SETTINGS": "1"}, "DRONE_SYNC_STRICT_SETTINGS"),
    ):
        result = run_cli(args, {**env, **extra}, work, timeout=60)
        assert result.code == EXIT_CONFIG, result.describe()
        assert TRACEBACK not in result.text and PASSWORD not in result.text
        lines = result.lines()
        assert len(lines) == len(EXPECTED_WARNINGS) + 1, result.describe()
        assert all("unknown " in line and " is refused; " in line for line in lines[:-1]), lines
        assert lines[-1].startswith(f"drone-sync: configuration error: {named}: "), lines
        assert f"{len(EXPECTED_WARNINGS)} unknown settings" in lines[-1], lines[-1]
    assert shared_sim.stats()["total"] == 0
    assert not (tmp_path / "w.duckdb").exists()

    clean = tmp_path / "clean"
    clean.mkdir()
    passed = run_cli(
        ["--strict-settings", "check"],
        cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key),
        clean,
        timeout=60,
    )
    assert passed.code == EXIT_OK, passed.describe()
    assert "unknown " not in passed.text, passed.describe()


# --- 5. status and check only read ----------------------------------------------------------


CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3
PR_CAPBSET_DROP = 24


def _without_root_overrides() -> None:
    """Runs in the reader's process before exec: drops the capabilities that let root write
    through mode bits (and change them), so a root test process gets the reader a non-root
    user is: a folder of mode 0555 refuses it as a read-only mount would. It stays root, so
    it still reaches an interpreter in a folder only root may enter (/root/.pyenv)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _read_only_tree(root: Path) -> None:
    """Every folder under `root` (and `root`) readable, none writable; every file read-only."""
    for path in sorted(root.rglob("*"), reverse=True):
        if not path.is_symlink():
            path.chmod(0o555 if path.is_dir() else 0o444)
    root.chmod(0o555)


READER = """
import contextlib, io, json, sys, traceback
from drone_ops_sync.pipelines.cli import main

results = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = -1
    results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(results))
"""
"""The reader: `cli.main` of each command in turn, in one process whose privileges are the
reader's, so the commands pay one interpreter's start and imports between them."""


def test_reading_commands_work_on_a_read_only_warehouse(
    tmp_path: Path,
    shared_sim: SimulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A warehouse and its BI snapshot in a folder the user may only read (a read-only mount,
    a BI host's account): `status`, `check`, `metrics` and `dashboard --output` elsewhere read
    it (`status` used to refuse with "--database: ... is read-only", `metrics` and `dashboard`
    with "destination.duckdb.bi_snapshot: ... cannot be created", exit 2) and write nothing
    there; the commands that must write there (`run`, `models`, `listen`, `demo`, `dashboard`
    beside the snapshot) say which path and why in one line, exit 2 (`listen` and `demo` used to
    end in a PermissionError's traceback). As root the reader runs without the
    capabilities that override mode bits; as another user the modes stop it as they are. The
    warehouse is made in this process; the reader is one process that runs every command."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    database = warehouse / "w.duckdb"
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    synced = run_in_process(
        ["run", "--no-models", "--database", str(database)], env, warehouse, monkeypatch, capsys
    )
    assert synced.code == EXIT_OK, synced.describe()
    assert (warehouse / "w_bi.duckdb").is_file(), synced.describe()
    (warehouse / ".dlt").mkdir()
    (warehouse / ".dlt" / "config.toml").write_text(
        f'[destination.duckdb]\ncredentials = "{database}"\n'
    )
    for lock in warehouse.glob("*.lock"):  # a copy on a BI host has none: none is made
        lock.unlink()
    elsewhere = tmp_path / "pages"
    elsewhere.mkdir()
    page = elsewhere / "page.html"
    spool = warehouse / ".drone_sync" / "w.duckdb"  # made by the run, the spool's parent
    must_write = {  # the path it would write, the read-only folder that stops it
        "run": (database, warehouse),
        "models": (database, warehouse),
        "listen": (spool / "events", spool),
        "demo": (warehouse / "demo" / "drone_ops_warehouse.duckdb", warehouse),
    }
    commands = [
        ["status"],
        ["status", "--database", str(database), "--log-format", "json"],
        ["check"],
        ["metrics"],
        ["dashboard", "--output", str(page)],
        ["dashboard"],
        *(
            [command, *(["--dir", str(warehouse / "demo")] if command == "demo" else [])]
            for command in must_write
        ),
    ]
    reader = {"preexec_fn": _without_root_overrides} if os.geteuid() == 0 else {}
    before = tree_snapshot(tmp_path, "wh")
    _read_only_tree(warehouse)
    try:
        probe = run_command(
            ["touch", str(warehouse / "probe")], env, warehouse, timeout=30, popen=reader
        )
        assert probe.code != 0, "the reader can write the folder: the test proves nothing"
        ran = run_command(
            [sys.executable, "-c", READER, json.dumps(commands)],
            env,
            warehouse,
            timeout=HANG_GUARD_S,
            popen=reader,
        )
        assert ran.code == EXIT_OK, ran.describe()
        results = [
            Result(args, done["code"], done["out"], done["err"], 0.0)
            for args, done in zip(commands, json.loads(ran.out), strict=True)
        ]
        status, by_flag, check, metrics, dashboard, beside, *refusals = results
        assert status.code == EXIT_OK, status.describe()
        assert TRACEBACK not in status.text
        assert "fresh: projects" in status.out, status.describe()
        assert by_flag.code == EXIT_OK, by_flag.describe()
        assert json_objects(by_flag.out)[0]["stale"] is False, by_flag.describe()
        assert check.code == EXIT_OK, check.describe()
        assert metrics.code == EXIT_OK, metrics.describe()
        assert "No metrics yet" in metrics.out and TRACEBACK not in metrics.text, metrics.describe()
        assert dashboard.code == EXIT_OK, dashboard.describe()
        assert page.is_file() and "<html" in page.read_text(encoding="utf-8").lower()
        line = one_line(beside)
        assert beside.code == EXIT_CONFIG, beside.describe()
        assert str(warehouse / "w_bi_dashboard.html") in line and "read-only" in line, line
        assert "--output" in line, line
        for (path, folder), refused in zip(must_write.values(), refusals, strict=True):
            line = one_line(refused)
            assert refused.code == EXIT_CONFIG, refused.describe()
            assert str(path) in line and f"{folder} is read-only" in line, line
        after = tree_snapshot(tmp_path, "wh")
    finally:
        for path in [warehouse, *warehouse.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
    assert after == before
