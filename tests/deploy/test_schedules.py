"""The schedules shipped in deploy/ and .github/workflows/ work as written.

A schedule file is code that nothing runs until the night it is needed: a flag renamed in the
CLI, a cron field out of range or a secret spelled two ways only shows as a run that never
happened. So each file is parsed the way its scheduler parses it, and its command is run the
way its scheduler runs it: the cron line by /bin/sh with cron's minimal environment, the
systemd unit's ExecStart as an argument list with the EnvironmentFile's variables, the
workflow's sync step by `bash -eo pipefail` with the step's env. Each runs against the real
simulator on 127.0.0.1 in a folder laid out like a deployed clone, with every connection to a
host other than loopback refused and logged (tests/pipelines/netguard), and must exit 0 and
leave rows in the warehouse.

Subcommands and flags are checked against `pipelines.cli.build_parser()`, never a copy, so a
change to the CLI fails here rather than on the server.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import json
import os
import re
import shlex
import shutil
import string
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from drone_ops_sync.pipelines.cli import EXIT_BUSY, EXIT_OK, build_parser
from testkit.simulator_process import SimulatorHandle, running_simulator

from ..pipelines.cli_helpers import (
    NETGUARD,
    NETGUARD_LOG_ENV,
    Result,
    run_command,
    sync_runs,
    table_counts,
)

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "drone-sync.yml"
CRONTAB = REPO / "deploy" / "cron" / "drone-sync.cron"
SERVICE = REPO / "deploy" / "systemd" / "drone-sync.service"
TIMER = REPO / "deploy" / "systemd" / "drone-sync.timer"
ENV_EXAMPLE = REPO / "deploy" / "systemd" / "drone-sync.env.example"
SCHEDULES_DOC = REPO / "docs" / "schedules.md"
LISTEN_SERVICE = REPO / "deploy" / "systemd" / "drone-sync-listen.service"
SCHEDULE_FILES = (WORKFLOW, CRONTAB, SERVICE, TIMER, ENV_EXAMPLE, SCHEDULES_DOC, LISTEN_SERVICE)

# the venv running these tests: its drone-sync is this checkout's code (editable install)
VENV = Path(sys.prefix)
API_KEY_VAR = "SOURCES__DRONE_OPS__API_KEY"
BASE_URL_VAR = "SOURCES__DRONE_OPS__BASE_URL"
# the tables every tiny workspace fills; a run that leaves one empty did not really sync
FILLED_TABLES = ("projects", "jobs", "job_types", "team_members", "webhooks")
RUN_TIMEOUT = 600.0  # one tiny run takes 5-30 s idle, minutes on a busy runner; stops a hung one
CRON_PATH = "/usr/bin:/bin"  # what Vixie cron / cronie give a job
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"


# --- parsing, as each scheduler does it ----------------------------------------------------

CRON_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
CRON_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
CRON_FIELDS: tuple[tuple[str, int, int, list[str]], ...] = (
    ("minute", 0, 59, []),
    ("hour", 0, 23, []),
    ("day of month", 1, 31, []),
    ("month", 1, 12, CRON_MONTHS),
    ("day of week", 0, 7, CRON_DAYS),
)
CRON_JOB = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S.*)$")
CRON_ENV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


def cron_field_problems(field: str, name: str, low: int, high: int, names: list[str]) -> list[str]:
    """Why one time field is not valid cron (lists of `*`, N or N-M, each optionally /step;
    month and weekday names as three letters, first of them = low), or nothing."""

    def value(text: str) -> int | None:
        if text.isdigit():
            number = int(text)
            return number if low <= number <= high else None
        lowered = text.lower()
        return names.index(lowered) + (1 if low == 1 else 0) if lowered in names else None

    problems = []
    for item in field.split(","):
        base, slash, step = item.partition("/")
        if slash and not (step.isdigit() and int(step) > 0):
            problems.append(f"{name} {field!r}: step {step!r} is not a positive number")
        if base == "*":
            continue
        start, dash, end = base.partition("-")
        first, last = value(start), value(end) if dash else None
        if first is None or (dash and (last is None or last < first)):
            problems.append(f"{name} {field!r}: {base!r} is not a value or range in {low}-{high}")
        elif slash and not dash:
            problems.append(f"{name} {field!r}: a step needs `*` or a range before it")
    return problems


def cron_problems(expression: str) -> list[str]:
    """Why a five-field cron expression is not valid, or nothing."""
    fields = expression.split()
    if len(fields) != len(CRON_FIELDS):
        return [f"{expression!r} has {len(fields)} fields, not 5"]
    return [
        problem
        for field, (name, low, high, names) in zip(fields, CRON_FIELDS, strict=True)
        for problem in cron_field_problems(field, name, low, high, names)
    ]


@dataclass(frozen=True)
class CronJob:
    """One job line: its five time fields and the command cron hands to the shell."""

    schedule: str
    command: str
    commented: bool


def crontab(text: str) -> tuple[dict[str, str], list[CronJob]]:
    """The environment assignments and job lines of a crontab, plus commented-out job lines
    that run drone-sync (the documented alternatives, which are run too so they cannot rot)."""
    env: dict[str, str] = {}
    jobs: list[CronJob] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            job = CRON_JOB.match(line.lstrip("#").strip())
            if (
                job
                and "/bin/drone-sync" in job.group(6)
                and not cron_problems(" ".join(job.group(*range(1, 6))))
            ):
                jobs.append(CronJob(" ".join(job.group(*range(1, 6))), job.group(6), True))
            continue
        assignment = CRON_ENV.match(line)
        if assignment:
            env[assignment.group(1)] = assignment.group(2).strip("\"'")
            continue
        job = CRON_JOB.match(line)
        assert job, f"neither a job, an assignment nor a comment: {line!r}"
        jobs.append(CronJob(" ".join(job.group(*range(1, 6))), job.group(6), False))
    return env, jobs


def systemd_unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A unit file as systemd reads it: sections of (key, value) in order, keys repeatable,
    `#` and `;` comment lines, a trailing backslash continuing the line."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        key, equals, value = line.partition("=")
        assert equals and current is not None, f"{path.name}: not `Key=value`: {line!r}"
        current.append((key.strip(), value.strip()))
    return sections


def unit_values(unit: Mapping[str, list[tuple[str, str]]], section: str, key: str) -> list[str]:
    return [value for name, value in unit.get(section, []) if name == key]


def unit_value(unit: Mapping[str, list[tuple[str, str]]], section: str, key: str) -> str:
    """The value systemd uses for a single-valued setting: the last one given."""
    values = unit_values(unit, section, key)
    assert values, f"[{section}] {key}= is not set"
    return values[-1]


def environment_file(text: str) -> dict[str, str]:
    """NAME=value lines as systemd's EnvironmentFile= reads them (comments skipped, one pair of
    surrounding quotes removed)."""
    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        name, equals, value = line.partition("=")
        assert equals and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), f"bad line {line!r}"
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[name] = value
    return env


def example_env_with(sim: SimulatorHandle) -> str:
    """deploy/systemd/drone-sync.env.example with the key and base URL filled in, line by
    line, so the rest of the file (its comments and quoting) is what a user copies."""
    values = {API_KEY_VAR: sim.read_key, BASE_URL_VAR: sim.base_url}
    lines = []
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        name = line.partition("=")[0]
        if name in values:
            value = values.pop(name)
            line = f'{name}="{value}"'
        lines.append(line)
    assert not values, f"the example sets none of {sorted(values)}"
    return "\n".join(lines) + "\n"


def workflow() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(document, dict), "the workflow is not a YAML mapping"
    return document


def workflow_triggers(document: Mapping[Any, Any]) -> dict[str, Any]:
    """`on:`, which YAML 1.1 (PyYAML, not GitHub) reads as the key True."""
    triggers = document.get("on", document.get(True))
    assert isinstance(triggers, dict), f"`on:` is not a mapping: {triggers!r}"
    return triggers


EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def substitute(text: str, resolve: Callable[[str], str]) -> str:
    """Replaces every `${{ expression }}` through `resolve`, as GitHub does before the shell
    sees the text."""
    return EXPRESSION.sub(lambda match: resolve(match.group(1)), text)


def resolver(values: Mapping[str, str]) -> Callable[[str], str]:
    """Resolves the expressions in `values` and refuses any other, so a step that grows an
    expression the test does not know fails here instead of running with it unresolved."""

    def resolve(expression: str) -> str:
        assert expression in values, f"no value for the expression ${{{{ {expression} }}}}"
        return values[expression]

    return resolve


def documented_secrets() -> set[str]:
    """The secrets the workflow's header lists, one `#   NAME  what it is` line each."""
    lines = WORKFLOW.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "secrets this workflow reads" in line)
    names = set()
    for line in lines[start + 1 :]:
        entry = re.match(r"#\s+([A-Z][A-Z0-9_]+)\s", line)
        if not entry:
            break
        names.add(entry.group(1))
    return names


def sync_step(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The one step that runs `drone-sync run`, and the environment GitHub gives its shell
    (workflow, job and step `env:`, the innermost winning)."""
    (job,) = document["jobs"].values()
    steps = [step for step in job["steps"] if "bin/drone-sync run" in step.get("run", "")]
    assert len(steps) == 1, f"expected one step running drone-sync, found {len(steps)}"
    env = {**document.get("env", {}), **job.get("env", {}), **steps[0].get("env", {})}
    return steps[0], {name: str(value) for name, value in env.items()}


def steps_using(document: Mapping[str, Any], action: str) -> list[dict[str, Any]]:
    (job,) = document["jobs"].values()
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(f"{action}@")]


# --- commands named in the files -----------------------------------------------------------

DRONE_SYNC_CALL = re.compile(r"(?:^|[\s\"'=(])\S*/bin/drone-sync(?P<rest>(?:[ \t][^\n]*)?)$")
VENV_COMMAND = re.compile(r"\.venv/bin/([A-Za-z0-9_.+-]+)")
SHELL_OPERATORS = {"&&", "||", ";", "|", "&"}


def markdown_code(text: str) -> str:
    """Fenced blocks and inline code spans of a Markdown page: where its commands are."""
    fenced = re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, re.DOTALL | re.MULTILINE)
    prose = re.sub(r"^\s*```[^\n]*\n.*?^\s*```", "", text, flags=re.DOTALL | re.MULTILINE)
    return "\n".join([*fenced, *re.findall(r"`([^`\n]+)`", prose)])


def command_text(path: Path) -> str:
    """The part of a file that may hold commands, comment markers removed, continued lines
    joined."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = markdown_code(text)
    text = re.sub(r"\\\n\s*#?", " ", text)
    return "\n".join(line.strip().lstrip("#").strip() for line in text.splitlines())


def drone_sync_calls(text: str) -> list[list[str]]:
    """The arguments of every `<path>/bin/drone-sync ARGS` call, up to the first shell
    operator or redirection. A bare path (prose naming the script) is no call."""
    calls = []
    for line in text.splitlines():
        for match in DRONE_SYNC_CALL.finditer(line):
            rest = match.group("rest").strip().strip("`")
            try:
                tokens = shlex.split(rest, posix=True)
            except ValueError as exc:
                pytest.fail(f"cannot split the drone-sync call {line!r}: {exc}")
            args: list[str] = []
            for token in tokens:
                if token in SHELL_OPERATORS or token[:1] in "<>|" or token.startswith("2>"):
                    break
                args.append(token)
            if args:
                calls.append(args)
    return calls


def expand(text: str, env: Mapping[str, str]) -> str:
    """`$NAME` and `${NAME}` replaced from `env`, as the shell would (quotes are left for
    shlex)."""
    return string.Template(text).safe_substitute(env)


def cli_refusal(args: list[str]) -> str | None:
    """What `drone-sync` says about these arguments if it refuses them, else None."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(args)
    except SystemExit as exc:
        return f"exit {exc.code}: {stderr.getvalue().strip()}"
    return None


# --- running, as each scheduler does it ----------------------------------------------------


def run(argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float = RUN_TIMEOUT) -> Result:
    return run_command(argv, env, cwd, timeout=timeout)


def deployed_project(root: Path) -> Path:
    """A folder that looks like a deployed clone to everything a run reads from its working
    directory: `.venv` (a symlink to the venv running these tests, so `.venv/bin/drone-sync`
    is this checkout's console script), the repository's `.dlt/config.toml` and `deploy/`
    (the cron line's env-file wrapper). The code and
    the dbt project are found through the installed package, not the working directory."""
    assert (VENV / "bin" / "drone-sync").exists(), f"drone-sync is not installed in {VENV}"
    root.mkdir(parents=True)
    (root / ".venv").symlink_to(VENV, target_is_directory=True)
    (root / ".dlt").mkdir()
    shutil.copy(REPO / ".dlt" / "config.toml", root / ".dlt" / "config.toml")
    shutil.copytree(REPO / "deploy", root / "deploy")
    return root


def guarded(env: Mapping[str, str], log: Path) -> dict[str, str]:
    """The scheduler's environment plus the network guard (Python started with it refuses and
    logs any connection that leaves loopback) and dlt's data folder beside the guard's log:
    as root dlt would use the machine's /var/dlt, which other tests watch. Nothing else is
    added to what the scheduler would give."""
    return {
        **env,
        "PYTHONPATH": str(NETGUARD),
        NETGUARD_LOG_ENV: str(log),
        "DLT_DATA_DIR": str(log.parent / "dlt-data"),
    }


def assert_loopback_only(log: Path) -> None:
    attempts = log.read_text(encoding="utf-8") if log.exists() else ""
    assert not attempts, f"connections beyond loopback were attempted:\n{attempts}"


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every non-blank line as a JSON object: a scheduler's log a machine can read."""
    objects = []
    for line in text.splitlines():
        if line.strip():
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError:
                pytest.fail(f"a log line is not JSON: {line!r}\n--- log ---\n{text[-4000:]}")
    return objects


def assert_success(objects: list[dict[str, Any]], context: str) -> dict[str, Any]:
    assert objects, f"no output\n{context}"
    summary = objects[-1]
    assert summary.get("event") == "summary", f"the last line is not the summary\n{context}"
    assert summary["exit_code"] == EXIT_OK and summary["outcome"] == "success", context
    return summary


def assert_warehouse_filled(database: Path) -> dict[str, int]:
    assert database.is_file(), f"no warehouse at {database}"
    counts = table_counts(database)
    empty = [table for table in FILLED_TABLES if not counts.get(table)]
    assert not empty, f"tables without rows: {empty}; counts: {counts}"
    return counts


def with_no_models(command: str) -> str:
    """The command with `--no-models` after `drone-sync run`: the model build is the same
    code under every scheduler and is run by the workflow test; the cron and systemd tests are
    about the environment, working directory, secrets and log, and stay fast."""
    changed, count = re.subn(r"(/bin/drone-sync\s+run)\b", r"\1 --no-models", command)
    assert count == 1, f"expected one `drone-sync run` in {command!r}"
    return changed


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    """A tiny workspace (5 projects) that no run changes: every test here only reads it."""
    with running_simulator(seed=11, scale="tiny", admin=False) as handle:
        yield handle


# --- cron ----------------------------------------------------------------------------------


def test_crontab_has_one_valid_job_and_no_percent_sign() -> None:
    """One active job; its five time fields are valid; its command has no `%` (which cron
    turns into a line break) and starts by changing into an absolute project folder."""
    _, jobs = crontab(CRONTAB.read_text(encoding="utf-8"))
    active = [job for job in jobs if not job.commented]
    assert len(active) == 1, f"expected one active job line, found {len(active)}"
    for job in jobs:
        assert not cron_problems(job.schedule), cron_problems(job.schedule)
        assert "%" not in job.command, f"cron reads % as a line break: {job.command!r}"
        assert re.match(r"cd /\S+ && ", job.command), f"no `cd /project && ...`: {job.command!r}"


def test_cron_validator_rejects_what_cron_rejects() -> None:
    """The field check is what guards every schedule here, so it is tested on both sides."""
    for good in ("*/30 * * * *", "17 */6 * * *", "0 9-17/2 1,15 jan-jun mon-fri", "0 0 * * 7"):
        assert not cron_problems(good), (good, cron_problems(good))
    for bad in (
        "*/30 * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "*/0 * * * *",
        "5/10 * * * *",
    ):
        assert cron_problems(bad), bad
    assert cron_problems("* * * 13 *") and cron_problems("* * * * 8")
    assert cron_problems("* * 5-1 * *"), "a backwards range"


def _cron_jobs() -> list[CronJob]:
    return crontab(CRONTAB.read_text(encoding="utf-8"))[1]


@pytest.mark.e2e
@pytest.mark.parametrize(
    "job",
    _cron_jobs(),
    ids=lambda job: "commented-alternative" if job.commented else "active-line",
)
def test_cron_command_runs_with_crons_environment(
    tmp_path: Path, sim: SimulatorHandle, job: CronJob
) -> None:
    """The command as cron runs it: `/bin/sh -c`, cron's environment (PATH=/usr/bin:/bin, HOME,
    LOGNAME, SHELL, the crontab's assignments, nothing else), the `cd` pointed at a deployed
    project. The key comes from where the line says: `.dlt/secrets.toml` in the project, or
    the environment file it sources, written from deploy/systemd/drone-sync.env.example. The
    appended log is JSON lines ending in a successful summary."""
    assignments, _ = crontab(CRONTAB.read_text(encoding="utf-8"))
    project = deployed_project(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    cd = re.match(r"cd (/\S+) && ", job.command)
    assert cd, job.command
    command = with_no_models(f"cd {shlex.quote(str(project))} && {job.command[cd.end() :]}")
    env = cron_environment(home, assignments)
    sourced = sourced_env_file(command, home)
    if sourced:
        env_file = sourced
        env_file.parent.mkdir(parents=True, exist_ok=True)
        env_file.write_text(example_env_with(sim), encoding="utf-8")
    else:
        (project / ".dlt" / "secrets.toml").write_text(
            f'[sources.drone_ops]\napi_key = "{sim.read_key}"\nbase_url = "{sim.base_url}"\n',
            encoding="utf-8",
        )
    log_target = re.search(r">>\s*(\S+)\s+2>&1\s*$", command)
    assert log_target, f"the command does not append stdout and stderr to a log: {command!r}"
    netguard_log = tmp_path / "netguard.log"

    ran = run(["/bin/sh", "-c", command], home, guarded(env, netguard_log))  # cron starts in HOME

    log = project / log_target.group(1)
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    context = f"{ran.describe()}\n--- log ---\n{text[-4000:]}"
    assert ran.code == EXIT_OK, context
    assert_success(json_lines(text), context)
    assert_warehouse_filled(project / "drone_ops_warehouse.duckdb")
    assert_loopback_only(netguard_log)


def cron_environment(home: Path, assignments: Mapping[str, str]) -> dict[str, str]:
    """What cron gives a job, and nothing else: the same as `env -i` with these variables."""
    return {
        "HOME": str(home),
        "LOGNAME": getpass.getuser(),
        "PATH": CRON_PATH,
        "SHELL": "/bin/sh",
        **assignments,
    }


def sourced_env_file(command: str, home: Path) -> Path | None:
    """The environment file a cron command reads its variables from, if it names one."""
    sourced = re.search(r"\s\"?(\S*/drone-sync\.env)\"?\s", command)
    return Path(sourced.group(1).replace("$HOME", str(home))) if sourced else None


PREVIOUS_SUCCESS = '{"event": "summary", "outcome": "success", "exit_code": 0}\n'


@pytest.mark.parametrize("damage", ["missing", "a-directory", "not-shell-assignments"])
def test_cron_env_file_that_cannot_be_read_is_logged_as_a_failure(
    tmp_path: Path, damage: str
) -> None:
    """The environment-file line, its file missing, not a file, or not readable by /bin/sh:
    the failure is appended to the same log as a JSON `summary` (`config_error`, exit code 2)
    naming the file, so `tail -n 1 drone-sync.jsonl | jq .outcome` no longer shows the
    previous run's success. Nothing is written outside the log."""
    assignments, jobs = crontab(CRONTAB.read_text(encoding="utf-8"))
    [job] = [job for job in jobs if sourced_env_file(job.command, tmp_path)]
    project = deployed_project(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    cd = re.match(r"cd (/\S+) && ", job.command)
    assert cd, job.command
    command = f"cd {shlex.quote(str(project))} && {job.command[cd.end() :]}"
    env_file = sourced_env_file(command, home)
    assert env_file is not None
    if damage == "a-directory":
        env_file.mkdir(parents=True)
    elif damage == "not-shell-assignments":
        env_file.parent.mkdir(parents=True)
        env_file.write_text('SOURCES__DRONE_OPS__API_KEY="unterminated\n', encoding="utf-8")
    log_target = re.search(r">>\s*(\S+)\s+2>&1\s*$", command)
    assert log_target, command
    log = project / log_target.group(1)
    log.write_text(PREVIOUS_SUCCESS, encoding="utf-8")

    ran = run(["/bin/sh", "-c", command], home, cron_environment(home, assignments))

    text = log.read_text(encoding="utf-8")
    context = f"{ran.describe()}\n--- log ---\n{text[-4000:]}"
    objects = json_lines(text)
    assert text.startswith(PREVIOUS_SUCCESS), context
    summary = objects[-1]
    assert summary["event"] == "summary", context
    assert (summary["outcome"], summary["exit_code"]) == ("config_error", 2), context
    assert str(env_file) in summary["error"], context
    assert ran.code == 2, context
    assert not ran.out.strip() and not ran.err.strip(), context


# --- systemd -------------------------------------------------------------------------------


def test_service_unit_is_a_hardened_oneshot_of_the_venvs_drone_sync() -> None:
    """What the unit promises in docs/schedules.md: oneshot (so the timer never overlaps two
    runs), the venv's drone-sync by full path inside WorkingDirectory, busy (75) not counted a
    failure, a start timeout, and sandboxing that leaves the project folder writable."""
    unit = systemd_unit(SERVICE)
    assert unit_value(unit, "Service", "Type") == "oneshot"
    workdir = unit_value(unit, "Service", "WorkingDirectory")
    assert workdir.startswith("/"), workdir
    argv = shlex.split(unit_value(unit, "Service", "ExecStart"))
    # no prefix (-, @, +, !): `-` would make systemd count every exit code a success
    assert argv[0] == f"{workdir}/.venv/bin/drone-sync", argv
    assert str(EXIT_BUSY) in unit_value(unit, "Service", "SuccessExitStatus").split()
    timeout = unit_value(unit, "Service", "TimeoutStartSec")
    assert timeout not in ("infinity", "0"), "a hung run would hold the timer forever"
    assert unit_value(unit, "Service", "NoNewPrivileges") == "yes"
    assert unit_value(unit, "Service", "PrivateTmp") == "yes"
    assert unit_value(unit, "Service", "ProtectSystem") == "strict"
    writable = " ".join(unit_values(unit, "Service", "ReadWritePaths")).split()
    assert workdir in writable, f"ProtectSystem=strict leaves {workdir} read-only"
    env_files = unit_values(unit, "Service", "EnvironmentFile")
    assert env_files and env_files[0].lstrip("-").startswith("/"), env_files
    assert set(environment_file(ENV_EXAMPLE.read_text(encoding="utf-8"))) >= {
        API_KEY_VAR,
        BASE_URL_VAR,
    }


def test_listen_unit_restarts_the_receiver_but_not_on_a_configuration_error() -> None:
    """The receiver beside the schedule (docs/events.md): a long-running process of the venv's
    drone-sync, restarted when it dies, not when a restart cannot help (2 configuration error,
    75 another receiver holds the spool), stopped by SIGTERM (143 is a clean stop), loopback
    only, with the same sandbox as the sync's unit."""
    unit = systemd_unit(LISTEN_SERVICE)
    workdir = unit_value(unit, "Service", "WorkingDirectory")
    argv = shlex.split(unit_value(unit, "Service", "ExecStart"))
    assert argv[:2] == [f"{workdir}/.venv/bin/drone-sync", "listen"], argv
    assert argv[argv.index("--host") + 1] == "127.0.0.1", argv
    assert unit_value(unit, "Service", "Restart") == "on-failure"
    assert set(unit_value(unit, "Service", "RestartPreventExitStatus").split()) == {"2", "75"}
    assert "143" in unit_value(unit, "Service", "SuccessExitStatus").split()
    assert unit_value(unit, "Service", "ProtectSystem") == "strict"
    assert workdir in " ".join(unit_values(unit, "Service", "ReadWritePaths")).split()
    assert "multi-user.target" in unit_values(unit, "Install", "WantedBy")


CALENDAR_SHORTHANDS = {"minutely", "hourly", "daily", "weekly", "monthly", "yearly", "annually"}


def calendar_problems(spec: str) -> list[str]:
    """Why an OnCalendar= value is not a plausible `[weekday] [Y-M-D] H:M[:S]` spec, or
    nothing (systemd-analyze, where installed, is asked as well: test_units_pass_systemd_analyze).
    Components are checked like cron fields, with systemd's `A..B` ranges and `start/step`."""
    if spec in CALENDAR_SHORTHANDS:
        return []
    shape = re.fullmatch(
        r"(?:[A-Za-z,.]+\s+)?(?:[^-\s]+-([^-\s]+)-([^-\s]+)\s+)?"
        r"([^:\s]+):([^:\s]+)(?::([^:\s]+))?",
        spec,
    )
    if not shape:
        return [f"{spec!r} is not `[weekday] [Y-M-D] H:M[:S]`"]
    names = ("month", "day", "hour", "minute", "second")
    bounds = ((1, 12), (1, 31), (0, 23), (0, 59), (0, 59))
    problems = []
    for name, (low, high), field in zip(names, bounds, shape.groups(), strict=True):
        if field is None:
            continue
        items = [re.sub(r"^(\d+)/", rf"\1-{high}/", item) for item in field.split(",")]
        as_cron = ",".join(re.sub(r"(\d+)\.\.(\d+)", r"\1-\2", item) for item in items)
        problems += cron_field_problems(as_cron, name, low, high, [])
    return problems


def test_timer_starts_the_service_on_a_plausible_calendar() -> None:
    """The timer names the service file shipped beside it, fires on a valid calendar, catches
    up after downtime (Persistent) and spreads its start (RandomizedDelaySec)."""
    timer = systemd_unit(TIMER)
    calendar = unit_value(timer, "Timer", "OnCalendar")
    assert not calendar_problems(calendar), calendar_problems(calendar)
    assert unit_value(timer, "Timer", "Unit") == SERVICE.name
    assert unit_value(timer, "Timer", "Persistent") == "true"
    assert unit_value(timer, "Timer", "RandomizedDelaySec")
    assert "timers.target" in unit_values(timer, "Install", "WantedBy")
    for good in ("*-*-* *:00/30:00", "Mon..Fri *-*-* 06:15", "hourly", "*:0/15"):
        assert not calendar_problems(good), good
    for bad in ("*-*-* 25:00:00", "*-13-* 00:00", "every half hour"):
        assert calendar_problems(bad), bad


def _deployed_units(tmp_path: Path, project: Path, env_file: Path) -> tuple[Path, Path]:
    """Copies of the two units with the project folder and environment file moved under
    tmp_path, as an installer would edit them."""
    unit = systemd_unit(SERVICE)
    workdir = unit_value(unit, "Service", "WorkingDirectory")
    declared_env = unit_values(unit, "Service", "EnvironmentFile")[0].lstrip("-")
    units = tmp_path / "units"
    units.mkdir()
    service = units / SERVICE.name
    text = SERVICE.read_text(encoding="utf-8").replace(declared_env, str(env_file))
    service.write_text(text.replace(workdir, str(project)), encoding="utf-8")
    timer = units / TIMER.name
    shutil.copy(TIMER, timer)
    return service, timer


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_units_pass_systemd_analyze(tmp_path: Path) -> None:
    """systemd's own checks: `systemd-analyze verify` on the units (paths moved to a deployed
    project, so ExecStart exists) and `systemd-analyze calendar` on OnCalendar."""
    project = deployed_project(tmp_path / "project")
    env_file = tmp_path / "drone-sync.env"
    env_file.write_text("", encoding="utf-8")
    service, timer = _deployed_units(tmp_path, project, env_file)
    verified = run(
        ["systemd-analyze", "verify", str(service), str(timer)], tmp_path, os.environ, 60
    )
    assert verified.code == 0, verified.describe()
    assert service.name not in verified.err and timer.name not in verified.err, verified.describe()
    calendar = unit_value(systemd_unit(TIMER), "Timer", "OnCalendar")
    parsed = run(["systemd-analyze", "calendar", calendar], tmp_path, os.environ, 60)
    assert parsed.code == 0, parsed.describe()


@pytest.mark.e2e
def test_service_execstart_runs_as_systemd_would(tmp_path: Path, sim: SimulatorHandle) -> None:
    """ExecStart as systemd runs it: an argument list (no shell), WorkingDirectory as the
    current directory, the environment systemd gives a system service plus the EnvironmentFile
    (the example, filled in). The run must exit 0 with a JSON summary on stdout (the journal),
    fill the warehouse inside WorkingDirectory (the only writable path under
    ProtectSystem=strict) and write nothing to HOME (ProtectHome=read-only)."""
    unit = systemd_unit(SERVICE)
    workdir = unit_value(unit, "Service", "WorkingDirectory")
    project = deployed_project(tmp_path / "project")
    argv = shlex.split(unit_value(unit, "Service", "ExecStart"))
    argv[0] = str(project / Path(argv[0]).relative_to(workdir))
    argv = shlex.split(with_no_models(shlex.join(argv)))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": SYSTEMD_PATH,
        "HOME": str(home),
        "USER": getpass.getuser(),
        "LOGNAME": getpass.getuser(),
        "SHELL": "/bin/sh",
        **environment_file(example_env_with(sim)),
    }
    netguard_log = tmp_path / "netguard.log"

    ran = run(argv, project, guarded(env, netguard_log))

    assert ran.code == EXIT_OK, ran.describe()
    assert_success(json_lines(ran.out), ran.describe())
    assert_warehouse_filled(project / "drone_ops_warehouse.duckdb")
    assert not list(home.iterdir()), f"the run wrote to HOME: {list(home.rglob('*'))}"
    assert_loopback_only(netguard_log)


# --- GitHub Actions ------------------------------------------------------------------------


def test_workflow_is_scheduled_dispatchable_and_serialised() -> None:
    """A valid cron schedule (GitHub's five fields, UTC), a manual trigger, and a concurrency
    group so two runs never write the warehouse at once (drone-sync's lock is a file on one
    runner and cannot see another)."""
    document = workflow()
    triggers = workflow_triggers(document)
    schedules = triggers.get("schedule")
    assert schedules, "no `on.schedule`"
    for entry in schedules:
        assert not cron_problems(entry["cron"]), cron_problems(entry["cron"])
    assert "workflow_dispatch" in triggers
    concurrency = document.get("concurrency")
    assert isinstance(concurrency, dict) and concurrency.get("group"), concurrency
    assert concurrency.get("cancel-in-progress") is not True, "a sync must not be cut off"


def test_workflow_uses_only_the_secrets_it_documents() -> None:
    """Every `secrets.X` (commented alternatives included) is listed in the workflow's header
    and named in docs/schedules.md, where whoever sets up the repository looks."""
    text = WORKFLOW.read_text(encoding="utf-8")
    used = set(re.findall(r"secrets\.([A-Za-z0-9_]+)", text))
    documented = documented_secrets()
    assert used, "the workflow reads no secret at all"
    assert used <= documented, f"used but not documented: {sorted(used - documented)}"
    guide = SCHEDULES_DOC.read_text(encoding="utf-8")
    assert all(name in guide for name in documented), "a secret is missing from the guide"


@pytest.mark.parametrize("path", SCHEDULE_FILES, ids=lambda path: path.name)
def test_every_command_named_exists(path: Path) -> None:
    """Every `.venv/bin/<command>` exists in an installed venv, and every drone-sync call is
    accepted by the CLI's own parser (subcommand and flags)."""
    text = command_text(path)
    missing = sorted(
        {name for name in VENV_COMMAND.findall(text) if not (VENV / "bin" / name).exists()}
    )
    assert not missing, f"{path.name} names commands the venv does not have: {missing}"
    refused = [(args, why) for args in drone_sync_calls(text) if (why := cli_refusal(args))]
    assert not refused, f"{path.name}: drone-sync refuses {refused}"


def test_command_checks_catch_a_bad_flag_and_a_bad_subcommand() -> None:
    """The check above must be able to fail: a renamed flag or subcommand is refused."""
    calls = drone_sync_calls("x && .venv/bin/drone-sync run --log-format json >> log 2>&1")
    assert calls == [["run", "--log-format", "json"]]
    assert cli_refusal(calls[0]) is None
    assert cli_refusal(["run", "--log-fromat", "json"]) is not None
    assert cli_refusal(["sync"]) is not None


FIND_STEP_ARTIFACTS = {
    "artifacts": [
        {
            "expired": True,
            "created_at": "2026-11-23T12:00:00Z",
            "workflow_run": {"id": 9, "head_branch": "main"},
        },
        {
            "expired": False,
            "created_at": "2026-11-23T11:00:00Z",
            "workflow_run": {"id": 8, "head_branch": "other"},
        },
        {
            "expired": False,
            "created_at": "2026-11-23T04:00:00Z",
            "workflow_run": {"id": 6, "head_branch": "main"},
        },
        {
            "expired": False,
            "created_at": "2026-11-23T10:00:00Z",
            "workflow_run": {"id": 7, "head_branch": "main"},
        },
    ]
}
"""Newest first except the last two, so only a filter that sorts by creation time finds 7."""


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
@pytest.mark.parametrize(
    ("artifacts", "allow_new", "code", "run_id"),
    [
        (FIND_STEP_ARTIFACTS, "false", 0, "7"),
        ({"artifacts": []}, "false", 1, None),
        ({"artifacts": []}, "true", 0, None),
    ],
    ids=["latest-live-on-branch", "none-refused", "none-allowed"],
)
def test_find_step_picks_the_latest_live_warehouse_or_refuses_to_start_empty(
    tmp_path: Path, artifacts: dict[str, Any], allow_new: str, code: int, run_id: str | None
) -> None:
    """The step that decides which warehouse a run continues from, run by bash with a stand-in
    `gh` that answers the artifacts API with canned JSON through jq (gh's --jq is jq's
    language): it picks the newest unexpired artifact of this branch, and without one it fails
    the run unless a new warehouse was asked for, because an empty warehouse would silently
    drop the history."""
    document = workflow()
    (job,) = document["jobs"].values()
    (step,) = [s for s in job["steps"] if "actions/artifacts" in s.get("run", "")]
    expressions = resolver(
        {"github.token": "token", "inputs.allow_new_warehouse || false": allow_new}
    )
    env_values = {name: substitute(str(value), expressions) for name, value in step["env"].items()}
    response = tmp_path / "artifacts.json"
    response.write_text(json.dumps(artifacts), encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(
        '#!/bin/bash\nprintf "%s\\n" "$*" >> "$FAKE_GH_CALLS"\n'
        '[ "$1" = api ] && [ "$3" = --jq ] || exit 64\n'
        'jq -r "$4" "$FAKE_GH_RESPONSE"\n',
        encoding="utf-8",
    )
    gh.chmod(0o755)
    output = tmp_path / "github_output"
    output.touch()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GITHUB_REPOSITORY": "owner/repo",
        "GITHUB_REF_NAME": "main",
        "GITHUB_OUTPUT": str(output),
        "FAKE_GH_CALLS": str(tmp_path / "calls"),
        "FAKE_GH_RESPONSE": str(response),
        **{k: str(v) for k, v in document.get("env", {}).items()},
        **env_values,
    }
    script = tmp_path / "step.sh"
    script.write_text(substitute(step["run"], expressions), encoding="utf-8")

    ran = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], tmp_path, env, 30)

    assert ran.code == code, ran.describe()
    assert output.read_text(encoding="utf-8") == (f"run-id={run_id}\n" if run_id else "")
    calls = (tmp_path / "calls").read_text(encoding="utf-8")
    assert f"repos/owner/repo/actions/artifacts?name={env['ARTIFACT_NAME']}" in calls
    if code:
        assert "::error::" in ran.out, ran.describe()


def uploaded_and_restored(
    document: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[list[str], str]:
    """The paths the upload step uploads and the folder the download step restores into,
    `${{ env.X }}` resolved."""
    expressions = resolver({f"env.{name}": value for name, value in env.items()})
    (upload,) = steps_using(document, "actions/upload-artifact")
    (download,) = steps_using(document, "actions/download-artifact")
    paths = substitute(str(upload["with"]["path"]), expressions).split()
    assert upload["with"]["name"] == download["with"]["name"], "uploads and downloads differ"
    return paths, substitute(str(download["with"]["path"]), expressions)


@pytest.mark.e2e
@pytest.mark.slow
def test_workflow_sync_step_runs_and_the_warehouse_carries_over(
    tmp_path: Path, sim: SimulatorHandle
) -> None:
    """The sync step exactly as written (bash -eo pipefail, the step's env with the secrets
    pointing at the simulator, the checkout as working directory) run twice, the way two
    scheduled runs chain: the first run's warehouse goes through what the upload step uploads
    and the download step restores (only those files: dlt's working folder does not travel),
    then the second run, which builds the dbt models, must exit 0 and find the first run's
    history (two runs in `_sync_runs`)."""
    document = workflow()
    step, step_env = sync_step(document)
    assert step.get("shell") == "bash", "without `shell: bash` GitHub runs `bash -e` (no pipefail)"
    assert not EXPRESSION.search(step["run"]), "an expression in `run:` is pasted into the script"
    secrets = {
        "secrets.DRONE_OPS_API_KEY": sim.read_key,
        "secrets.DRONE_OPS_BASE_URL": sim.base_url,
    }
    env_values = {name: substitute(value, resolver(secrets)) for name, value in step_env.items()}
    assert (
        env_values.get(API_KEY_VAR) == sim.read_key and env_values.get(BASE_URL_VAR) == sim.base_url
    )
    plain_env = {k: v for k, v in step_env.items() if not EXPRESSION.search(v)}
    uploaded, restore_dir = uploaded_and_restored(document, plain_env)

    def run_step(checkout: Path, script_text: str) -> Result:
        script = checkout.parent / f"{checkout.name}-step.sh"
        script.write_text(script_text, encoding="utf-8")
        home = checkout.parent / f"{checkout.name}-home"
        home.mkdir()
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            **env_values,
        }
        argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
        return run(argv, checkout, guarded(env, tmp_path / "netguard.log"), RUN_TIMEOUT)

    # the previous scheduled run, models skipped to save time
    previous = deployed_project(tmp_path / "previous")
    first = run_step(previous, with_no_models(step["run"]))
    assert first.code == EXIT_OK, first.describe()
    args = build_parser().parse_args(drone_sync_calls(expand(step["run"], plain_env))[0])
    database = Path(args.database) if args.database else Path("drone_ops_warehouse.duckdb")

    # the artifact: the files the upload step lists, relative to their common folder
    root = Path(os.path.commonpath(uploaded)) if len(uploaded) > 1 else Path(uploaded[0]).parent
    assert str(database) in uploaded, f"the upload step does not upload {database}: {uploaded}"
    assert Path(restore_dir) == root, f"downloaded into {restore_dir}, uploaded from {root}"
    checkout = deployed_project(tmp_path / "checkout")
    for path in uploaded:
        if (previous / path).exists():
            target = checkout / restore_dir / Path(path).relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(previous / path, target)

    second = run_step(checkout, step["run"])

    assert second.code == EXIT_OK, second.describe()
    summary = assert_success(json_lines(second.out), second.describe())
    assert summary["models"] and summary["models"]["ok"], summary["models"]
    assert_warehouse_filled(checkout / database)
    runs = {row["run_id"] for row in sync_runs(checkout / database)}
    assert len(runs) == 2, f"the second run did not continue the first's warehouse: {runs}"
    assert_loopback_only(tmp_path / "netguard.log")
