"""A closed standard output (`drone-sync ... | head -1`) ends every command that writes to stdout
the way it ends a Unix tool: no traceback, no error line, exit 141 (SIGPIPE's code, what a shell
with `set -o pipefail` reports for `git log | head -1`), or 0 when everything was written before
the reader left. A run so ended stops as at SIGTERM, and the next run heals.

Two ways to close it: a pipe whose reader is gone before the command starts (its first write
fails, every time), and a reader that takes one line and leaves, as `head -1` does, repeated
because where the command is then is a race. Every writer of stdout goes through one guard, so
one command per way of writing is run (`CASES`); `run` in both output formats, the JSON run
also while its heartbeat thread is the first to write after the reader left. Every command runs
as a process (forked from the CLI zygote: `cli_helpers.piped`) against the simulator over HTTP
on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import (
    EXIT_OK,
    HANG_GUARD_S,
    Result,
    cli_env,
    closed_from_the_start,
    piped,
    run_cli,
    wait_until,
)
from .test_sync_e2e import assert_equals_api

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXIT_SIGPIPE = 141
TRIES = 4
"""How often the `head -1` race is run per command (the closed-from-the-start case is exact)."""


@dataclass(frozen=True)
class Warehouse:
    """A synced warehouse with its BI snapshot, which `status` and `metrics` read, and the
    environment of the runs that made it."""

    folder: Path
    env: dict[str, str]
    sim: SimulatorHandle

    @property
    def database(self) -> Path:
        return self.folder / "w.duckdb"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    folder = tmp_path_factory.mktemp("closed-stdout")
    with running_simulator(seed=31, scale="tiny", admin=True) as sim:
        env = cli_env(folder, base_url=sim.base_url, api_key=sim.read_key)
        first = run_cli(["run", "--database", str(folder / "w.duckdb")], env, folder)
        assert first.code == EXIT_OK, first.describe()
        yield Warehouse(folder, env, sim)


def head_one(args: Sequence[str], env: dict[str, str], cwd: Path) -> Result:
    """`drone-sync ARGS | head -1`: the first line is read, then the pipe is closed."""
    err = cwd / "head-one.err"
    with piped(args, env, cwd, err) as process:
        first = process.stdout.readline()
        process.stdout.close()
        code = process.wait(timeout=HANG_GUARD_S)
    return Result(list(args), code, first.decode(), err.read_text(), 0.0)


def assert_quiet_end(result: Result, codes: Sequence[int] = (EXIT_SIGPIPE,)) -> None:
    assert result.code in codes, result.describe()
    assert not result.err.strip(), f"expected nothing on stderr:\n{result.describe()}"


COMMANDS = {
    "check": ["check"],
    "check-warning": ["check"],
    "status": ["status", "--database", "w.duckdb"],
    "metrics": ["metrics", "--database", "w.duckdb"],
    "init": ["init", "starter", "--force"],
}
"""The commands that only read or write small files, by a name for the test ids;
`check-warning` is `check` with a misspelled setting, whose warning is the first write (a log
line, through the logging handler)."""


def command_env(warehouse: Warehouse, name: str) -> dict[str, str]:
    if name == "check-warning":
        return {**warehouse.env, "SOURCES__DRONE_OPS__MAX_WORKER": "4"}
    return warehouse.env


CASES = [
    ("check", "text"),
    ("status", "json"),
    ("metrics", "json"),
    ("check-warning", "json"),
    ("init", "text"),
    ("--version", "text"),
]
"""One command per way to write stdout, all of them behind the one guard of `sys.stdout`
(`run/signals.py`): rich's console (every text output), the JSON events, a command's own JSON
lines (`metrics` and `dashboard`), the JSON log handler (a warning is the first write), `init`'s
own lines, and argparse's `--version`. A text warning goes to stderr, not to the closed
stdout."""


@pytest.mark.parametrize(("name", "log_format"), CASES, ids=["-".join(case) for case in CASES])
def test_a_pipe_closed_before_the_first_write(
    warehouse: Warehouse, name: str, log_format: str
) -> None:
    args = ["--log-format", log_format, *COMMANDS.get(name, [name])]
    result = closed_from_the_start(args, command_env(warehouse, name), warehouse.folder)
    assert_quiet_end(result)


@pytest.mark.parametrize(
    ("name", "log_format"),
    [("metrics", "text"), ("check", "json"), ("metrics", "json")],
    ids=["metrics-text", "check-json", "metrics-json"],
)
def test_a_reader_that_takes_one_line_and_leaves(
    warehouse: Warehouse, name: str, log_format: str
) -> None:
    """Rich's console, the JSON events and a command's own JSON lines, each from a command
    with more to write when the reader leaves (a table, events as the check goes, a line per
    metric)."""
    args = ["--log-format", log_format, *COMMANDS[name]]
    for _ in range(TRIES):
        result = head_one(args, command_env(warehouse, name), warehouse.folder)
        assert result.out.strip(), result.describe()
        assert_quiet_end(result, (EXIT_SIGPIPE, EXIT_OK))


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_run_whose_output_is_closed_stops_and_the_next_run_heals(
    warehouse: Warehouse, tmp_path: Path, log_format: str
) -> None:
    """Text writes first at the summary, after the load; JSON at its `start` event, before
    the walk. Either way the run ends there, quietly, and the next one exits 0 and equals
    the API; a `head -1` after that too."""
    env = cli_env(tmp_path, base_url=warehouse.sim.base_url, api_key=warehouse.sim.read_key)
    args = ["--log-format", log_format, "run", "--no-models", "--database", "w.duckdb"]
    assert_quiet_end(closed_from_the_start(args, env, tmp_path))
    assert_quiet_end(head_one(args, env, tmp_path), (EXIT_SIGPIPE, EXIT_OK))
    rerun = run_cli(args, env, tmp_path)
    assert rerun.code == EXIT_OK, rerun.describe()
    assert_equals_api(warehouse.sim, Target(database=tmp_path / "w.duckdb"))


def test_a_heartbeat_that_finds_the_output_closed_stops_the_run(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """The reader takes the `start` event and leaves while the walk is held at the simulator's
    gate; the first write after that is the heartbeat's, from its own thread, and the run
    stops cooperatively at it."""
    sim = warehouse.sim
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    args = ["--log-format", "json", "run", "--no-models", "--heartbeat", "0.2"]
    err = tmp_path / "stopped.err"
    sim.set_gate(True)
    try:
        with piped([*args, "--database", "w.duckdb"], env, tmp_path, err) as process:
            assert b'"event": "start"' in process.stdout.readline()
            assert wait_until(lambda: sim.gate()["held"] >= 1, HANG_GUARD_S)
            process.stdout.close()
            code = process.wait(timeout=HANG_GUARD_S)
    finally:
        sim.set_gate(False)
    assert (code, err.read_text().strip()) == (EXIT_SIGPIPE, ""), err.read_text()
    rerun = run_cli([*args, "--database", "w.duckdb"], env, tmp_path)
    assert rerun.code == EXIT_OK, rerun.describe()
    assert_equals_api(sim, Target(database=tmp_path / "w.duckdb"))
