"""`drone-sync init`'s starter files: what they say, and how they are written.

The templates are package data (pipelines/starter/), the repository keeps its own
`.dlt/config.toml` and `.dlt/secrets.toml.example`: two copies of one set of defaults, so they
are compared setting by setting here (comments may differ), and the source settings against the
defaults the code applies when a setting is absent, so a new user and this repository's own runs
start from the same values."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from dataclasses import fields
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.cli import main
from drone_ops_sync.pipelines.project_init import starter_text
from drone_ops_sync.sources.drone_ops.config import SourceConfig

REPO = Path(__file__).resolve().parents[2]
PLACEHOLDER = "<your read-only API key>"


def test_starter_config_agrees_with_the_repository_config() -> None:
    repository = tomllib.loads((REPO / ".dlt" / "config.toml").read_text(encoding="utf-8"))
    assert tomllib.loads(starter_text("config.toml")) == repository


def test_starter_secrets_agree_with_the_example() -> None:
    example = tomllib.loads((REPO / ".dlt" / "secrets.toml.example").read_text(encoding="utf-8"))
    starter = tomllib.loads(starter_text("secrets.toml"))
    assert starter == example
    assert starter["sources"]["drone_ops"]["api_key"] == PLACEHOLDER


def test_starter_source_settings_are_the_code_defaults() -> None:
    """Every source setting the starter sets is a `SourceConfig` field with that default."""
    defaults = SourceConfig(base_url="", api_key="")
    names = {field.name for field in fields(SourceConfig)}
    given = tomllib.loads(starter_text("config.toml"))["sources"]["drone_ops"]
    assert set(given) <= names
    assert given == {name: getattr(defaults, name) for name in given}


@pytest.mark.parametrize("name", ["config.toml", "secrets.toml"])
def test_starter_points_only_at_what_an_installed_copy_has(name: str) -> None:
    """A wheel user has no docs/ folder, README or repository paths: the starter explains each
    setting beside it and points at commands (`drone-sync check`, `--help`) instead."""
    text = starter_text(name)
    for absent in ("docs/", "README", ".md", "sources/drone_ops/"):
        assert absent not in text, f"{name} points at {absent!r}"
    if name == "config.toml":
        commands = re.findall(r"`(drone-sync [a-z]+)[^`]*`", text)
        assert commands, "the starter names the commands that explain and check it"
        for command in commands:
            assert command.split()[1] in {"check", "dashboard", "init", "--help"}, command


def test_init_writes_the_starter_with_a_private_secrets_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "project"
    old_umask = os.umask(0)  # a permissive umask must not widen the secrets file
    try:
        assert main(["init", str(folder)]) == 0
    finally:
        os.umask(old_umask)
    settings = folder / ".dlt"
    assert (settings / "config.toml").read_text(encoding="utf-8") == starter_text("config.toml")
    secrets = settings / "secrets.toml"
    assert secrets.read_text(encoding="utf-8") == starter_text("secrets.toml")
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    out = capsys.readouterr().out
    assert str(secrets) in out and "drone-sync check" in out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_ignores_the_secrets_file(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".dlt/secrets.toml"], cwd=tmp_path, timeout=60
    )
    kept = subprocess.run(
        ["git", "check-ignore", "-q", ".dlt/config.toml"], cwd=tmp_path, timeout=60
    )
    assert (ignored.returncode, kept.returncode) == (0, 1)


def test_init_refuses_to_overwrite_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / ".dlt"
    settings.mkdir()
    (settings / "secrets.toml").write_text('[sources.drone_ops]\napi_key = "real"\n')
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "secrets.toml" in err and "--force" in err
    assert not (settings / "config.toml").exists(), "a refusal writes nothing"
    assert "real" in (settings / "secrets.toml").read_text()

    assert main(["init", str(tmp_path), "--force"]) == 0
    assert PLACEHOLDER in (settings / "secrets.toml").read_text()
    assert stat.S_IMODE((settings / "secrets.toml").stat().st_mode) == 0o600


def test_init_answers_in_json_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--log-format json`, before `init` or after it: one `init` object naming the files
    written and the next step; a refusal is one `error` object, as every command's, and
    nothing on stderr."""
    assert main(["--log-format", "json", "init", str(tmp_path)]) == 0
    told = capsys.readouterr()
    event = json.loads(told.out)
    assert (event["event"], told.err, told.out.count("\n")) == ("init", "", 1), told
    written = {Path(path).name for path in event["written"]}
    assert written == {"config.toml", "secrets.toml", ".gitignore"}, event
    assert "drone-sync check" in event["next"] and event["ts"], event
    assert main(["init", str(tmp_path), "--log-format", "json"]) == 2
    told = capsys.readouterr()
    event = json.loads(told.out)
    assert (event["event"], event["kind"], told.err) == ("error", "configuration error", ""), told
    assert "--force" in event["message"], event


def test_init_keeps_an_existing_gitignore(tmp_path: Path) -> None:
    settings = tmp_path / ".dlt"
    settings.mkdir()
    (settings / ".gitignore").write_text(".var/")  # no final newline
    assert main(["init", str(tmp_path)]) == 0
    lines = (settings / ".gitignore").read_text().splitlines()
    assert lines[0] == ".var/" and lines[-1] == "secrets.toml"
    assert main(["init", str(tmp_path), "--force"]) == 0
    assert (settings / ".gitignore").read_text().count("secrets.toml") == 1


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"drone-sync {version('drone-ops-sync')}\n"


def test_init_reports_an_unwritable_folder_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["init", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write into" in err


HEAVY = ("dlt", "duckdb", "pyarrow", "httpx", "rich", "dbt", "uvicorn", "starlette", "simulator")
MODULES_AFTER = """
import json, sys
from drone_ops_sync.pipelines import cli
try:
    code = cli.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("command", ["init", "init-json", "--version"])
def test_init_and_version_import_nothing_heavy(command: str, tmp_path: Path) -> None:
    """Both answer before the CLI loads dlt, DuckDB or dbt, like `--help`
    (tests/pipelines/test_cli_imports.py), checked in a fresh interpreter."""
    argv = {
        "init": ["init", str(tmp_path)],
        "init-json": ["--log-format", "json", "init", str(tmp_path)],
    }.get(command, [command])
    done = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    tops = {name.removeprefix("drone_ops_sync.").split(".")[0] for name in result["modules"]}
    assert result["code"] == 0 and sorted(tops & set(HEAVY)) == []
