"""Mistakes an operator makes, each answered with one line and a documented exit code
(docs/operations.md, "Common mistakes"): a global output option written before the command, a
TOML file that does not parse, the example's placeholder key, a refused key (and an API that
is down: one cause, one line), a misspelled setting, and
`status` / `check` on a warehouse the user may only read. Every case runs `drone-sync` as a
subprocess in the test's own folder, against the simulator over HTTP on 127.0.0.1 where a
request is made."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
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
    REPO,
    TRACEBACK,
    Result,
    cli_command,
    cli_env,
    run_cli,
    run_command,
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


@pytest.mark.parametrize("file_name", ["config.toml", "secrets.toml"])
@pytest.mark.parametrize("command", [["check"], ["run", "--no-models"], ["status"]])
def test_unparsable_toml_is_one_line_naming_file_line_and_column(
    tmp_path: Path, file_name: str, command: list[str]
) -> None:
    """An unclosed quote: one line naming the file, its line and column, exit 2 (it used to
    be dlt's 83-line traceback and exit 1)."""
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
    tmp_path: Path, shared_sim: SimulatorHandle, cause: str
) -> None:
    """A wrong key is refused on every endpoint, and an API that is down fails every endpoint
    alike: `run` names that cause once, with every table and the first endpoint (it used to
    print one line per endpoint), and the JSON summary's `error` is that cause."""
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
        result = run_cli(args, env, tmp_path)
        as_json = run_cli(["--log-format", "json", *args], env, tmp_path)
    assert result.code == as_json.code == EXIT_FAILED, result.describe()
    assert TRACEBACK not in result.text, result.describe()
    told = [line for line in result.lines() if f" {cause} " in line or f"({cause} " in line]
    assert len(told) == 1, f"the cause on {len(told)} lines:\n{result.describe()}"
    assert told[0].startswith(", ".join(ALL_TABLES) + ": GET /v1/projects (and "), told
    summary = json_objects(as_json.out)[-1]
    assert summary["event"] == "summary" and cause in summary["error"], as_json.describe()


# --- 4. a misspelled setting ----------------------------------------------------------------


def test_misspelled_settings_warn_once_naming_the_closest_name(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """`max_worker = 4` (TOML, top level and a named workspace) and
    SOURCES__DRONE_OPS__MAX_WORKER: one warning line each naming the key, where it was found
    and the closest known name; the command's exit code is unchanged."""
    work = tmp_path / "project"
    (work / ".dlt").mkdir(parents=True)
    (work / ".dlt" / "config.toml").write_text(
        "[sources.drone_ops]\n"
        "max_worker = 4\n"
        "[sources.drone_ops.workspaces.acme]\n"
        f'base_url = "{shared_sim.base_url}"\n'
        "timeout_secs = 5\n"
    )
    (work / ".dlt" / "secrets.toml").write_text(
        f'[sources.drone_ops.workspaces.acme]\napi_key = "{shared_sim.read_key}"\n'
    )
    env = cli_env(
        tmp_path,
        base_url=shared_sim.base_url,
        api_key=shared_sim.read_key,
        settings={"RETRY_BUDGET": "30"},
    )
    result = run_cli(["check"], env, work, timeout=60)
    assert result.code == EXIT_OK, result.describe()
    assert TRACEBACK not in result.text
    warnings = [line for line in result.err.splitlines() if "unknown setting" in line]
    assert len(warnings) == 3, result.describe()
    toml_top = [w for w in warnings if "sources.drone_ops.max_worker " in w]
    assert len(toml_top) == 1 and ".dlt/config.toml" in toml_top[0], warnings
    assert "did you mean sources.drone_ops.max_workers?" in toml_top[0], warnings
    acme = [w for w in warnings if "workspaces.acme.timeout_secs" in w]
    assert len(acme) == 1 and "workspaces.acme.timeout_seconds?" in acme[0], warnings
    environ = [w for w in warnings if "SOURCES__DRONE_OPS__RETRY_BUDGET " in w]
    assert len(environ) == 1 and "environment" in environ[0], warnings
    assert "SOURCES__DRONE_OPS__RETRY_BUDGET_SECONDS?" in environ[0], warnings

    as_json = run_cli(["check", "--log-format", "json"], env, work, timeout=60)
    assert as_json.code == EXIT_OK, as_json.describe()
    logs = [
        obj
        for obj in json_objects(as_json.out)
        if obj["event"] == "log" and "unknown setting" in obj["message"]
    ]
    assert len(logs) == 3 and {obj["level"] for obj in logs} == {"WARNING"}, as_json.describe()


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


def test_status_and_check_work_on_a_read_only_warehouse(
    tmp_path: Path, shared_sim: SimulatorHandle
) -> None:
    """A warehouse on a folder the user may only read (a read-only mount, a BI user's
    account): `status` reads it (it used to refuse: "--database: ... is read-only", exit 2),
    `check` runs from it, and neither writes a thing there. As root the reader runs without
    the capabilities that override mode bits; as another user the modes stop it as they are."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    database = warehouse / "w.duckdb"
    env = cli_env(tmp_path, base_url=shared_sim.base_url, api_key=shared_sim.read_key)
    synced = run_cli(
        ["run", "--no-models", "--no-snapshot", "--database", str(database)], env, warehouse
    )
    assert synced.code == EXIT_OK, synced.describe()
    (warehouse / ".dlt").mkdir()
    (warehouse / ".dlt" / "config.toml").write_text(
        f'[destination.duckdb]\ncredentials = "{database}"\n'
    )
    reader = {"preexec_fn": _without_root_overrides} if os.geteuid() == 0 else {}
    before = tree_snapshot(tmp_path, "wh")
    _read_only_tree(warehouse)
    try:

        def as_reader(args: list[str]) -> Result:
            result = run_command(cli_command(args), env, warehouse, timeout=120, popen=reader)
            result.args = args
            return result

        probe = run_command(
            ["touch", str(warehouse / "probe")], env, warehouse, timeout=30, popen=reader
        )
        assert probe.code != 0, "the reader can write the folder: the test proves nothing"
        status = as_reader(["status"])
        assert status.code == EXIT_OK, status.describe()
        assert TRACEBACK not in status.text
        assert "fresh: projects" in status.out, status.describe()
        by_flag = as_reader(["status", "--database", str(database), "--log-format", "json"])
        assert by_flag.code == EXIT_OK, by_flag.describe()
        assert json_objects(by_flag.out)[0]["stale"] is False, by_flag.describe()
        check = as_reader(["check"])
        assert check.code == EXIT_OK, check.describe()
        after = tree_snapshot(tmp_path, "wh")
    finally:
        for path in [warehouse, *warehouse.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
    assert after == before
