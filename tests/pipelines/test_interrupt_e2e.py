"""SIGINT (Ctrl-C) and SIGTERM to a real `drone-sync run` at every moment of it: while Python
imports (the first half second), during the walk, the load, the dbt build, the BI snapshot and
its dashboard page. Each ends with exit 130 / 143 and exactly one line saying what was
interrupted and what the next run does (stderr in text, an `error` event in JSON): no traceback
and no `KeyboardInterrupt` from us, dlt or dbt. The next run exits 0 and the warehouse equals the
API.

The moments are found by observing the run (its handler installed, a request held at the
simulator's gate, a `table` event, dbt's compiled files, the snapshot's temporary file), not by
sleeping; the run is frozen (SIGSTOP) as soon as the moment is seen, so the signal lands there
and not wherever the run got to while the test looked. Only the start-up cases send the signal
at fixed small delays after the handler is installed, since landing somewhere in the imports is
their point. What the interpreter does before drone-sync's first line runs (tens of
milliseconds) is Python's own and not tested here (docs/operations.md, "Interrupting a run").
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import SimulatorHandle, running_simulator

from .cli_helpers import (
    ALL_TABLES,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    TRACEBACK,
    Background,
    Result,
    cli_env,
    run_cli,
    sync_runs,
    wait_until,
)
from .test_sync_e2e import assert_equals_api

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXIT_CODE = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}
MOMENT_BOUND_S = 300.0
"""How long a run may take to reach the moment a test interrupts it at: a bound, not a pace."""
STOP_BOUND_S = 120.0
"""How long an interrupted run may take to end: a bound for one that ignores the signal."""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    """A tiny workspace that no test here changes (each xdist worker starts its own)."""
    with running_simulator(seed=29, scale="tiny", admin=True) as handle:
        yield handle


def handles_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM: Python catches only SIGINT at start, so this is
    the moment `console_script.py` installed its handler, before the command's imports."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    caught = re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.MULTILINE)
    return caught is not None and bool(int(caught[1], 16) >> (signal.SIGTERM - 1) & 1)


def interrupt_at(run: Background, moment: Callable[[], Any], signum: int, what: str) -> None:
    """Sends `signum` at the moment `moment()` first holds: the run is stopped (SIGSTOP) as
    soon as it is seen, signalled, then continued, so the signal is handled right there.

    The signal goes to the main thread, as a Ctrl-C's does while the main thread can take it
    (the kernel offers it there first). Sent to a stopped process as a whole, it would go to
    whichever of the run's threads resumes first, and CPython runs a handler for a signal that
    a thread other than the main one received only at its next look, which a run may not take
    before its end."""
    assert wait_until(lambda: not run.running() or moment(), MOMENT_BOUND_S, interval=0.005)
    assert run.running(), f"the run ended before {what}"
    os.kill(run.pid, signal.SIGSTOP)
    try:
        assert LIBC.tgkill(run.pid, run.pid, signum) == 0, os.strerror(ctypes.get_errno())
    finally:
        os.kill(run.pid, signal.SIGCONT)


LIBC = ctypes.CDLL(None, use_errno=True)
"""For `tgkill`: a signal to one thread of a process (the main thread's id is the pid)."""


def interrupted(run: Background, moment: Callable[[], Any], signum: int, what: str) -> Result:
    """The run, interrupted at `moment` (`interrupt_at`), once it ended (`ended`)."""
    try:
        interrupt_at(run, moment, signum, what)
        return ended(run, signum)
    finally:
        run.stop()


def ended(run: Background, signum: int) -> Result:
    """The run's end after `signum`: its code, and no traceback from anyone."""
    try:
        result = run.wait(timeout=STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOP_BOUND_S:g} s after {signal.Signals(signum).name}")
    assert result.code == EXIT_CODE[signum], result.describe()
    for word in (TRACEBACK, "KeyboardInterrupt"):
        assert word not in result.text, result.describe()
    return result


def the_line(result: Result, signum: int) -> str:
    """The one line of a text run that a signal stopped: on stderr, saying which signal."""
    lines = result.err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr:\n{result.describe()}"
    prefix = f"drone-sync: interrupted: stopped by {signal.Signals(signum).name}"
    assert lines[0].startswith(prefix) and "next run" in lines[0], result.describe()
    return lines[0]


def healed(sim: SimulatorHandle, tmp_path: Path, *flags: str) -> None:
    """The next run exits 0, and the warehouse equals the API; no temporary file is left."""
    database = tmp_path / "w.duckdb"
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    rerun = run_cli(["run", "--database", str(database), *flags], env, tmp_path)
    assert rerun.code == EXIT_OK, rerun.describe()
    assert_equals_api(sim, Target(database=database))
    leftovers = [path.name for path in tmp_path.iterdir() if ".tmp-" in path.name]
    assert not leftovers, leftovers


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def start(sim: SimulatorHandle, tmp_path: Path, *flags: str, fresh: bool = False) -> Background:
    """`drone-sync run FLAGS` in the background; in a new interpreter when `fresh` (a signal
    during its start and imports), else forked with the imports done (a signal later)."""
    env = cli_env(tmp_path, base_url=sim.base_url, api_key=sim.read_key)
    args = ["run", "--database", str(tmp_path / "w.duckdb"), *flags]
    return Background(args, env, tmp_path, tmp_path / "logs", "interrupted", fresh=fresh)


# --- while Python imports, before the command begins ------------------------------------------


@pytest.mark.parametrize(
    ("signum", "delay"),
    [
        (signal.SIGINT, 0.0),
        (signal.SIGINT, 0.05),
        (signal.SIGINT, 0.15),
        (signal.SIGINT, 0.3),
        (signal.SIGINT, 0.5),
        (signal.SIGTERM, 0.0),
        (signal.SIGTERM, 0.3),
    ],
    ids=lambda value: signal.Signals(value).name if isinstance(value, int) else f"{value}s",
)
def test_a_signal_in_the_first_half_second(
    sim: SimulatorHandle, tmp_path: Path, signum: int, delay: float
) -> None:
    """The handler is there before the heavy imports (no DuckDB or Arrow library is loaded
    when it is seen), and a signal anywhere in them is the one line."""
    run = start(sim, tmp_path, "--no-models", fresh=True)
    try:
        seen = lambda: not run.running() or handles_sigterm(run.pid)  # noqa: E731
        assert wait_until(seen, MOMENT_BOUND_S, interval=0.002)
        assert run.running(), "the run ended before its handler was seen"
        os.kill(run.pid, signal.SIGSTOP)
        try:
            loaded = Path(f"/proc/{run.pid}/maps").read_text()
        finally:
            os.kill(run.pid, signal.SIGCONT)
        assert "duckdb" not in loaded and "arrow" not in loaded, "handler after the imports"
        # a fixed delay on purpose: wherever in the imports the signal lands, it is one line
        wait_until(lambda: not run.running(), delay)
        run.process.send_signal(signum)
        result = ended(run, signum)
    finally:
        run.stop()
    the_line(result, signum)
    assert not result.out.strip(), result.describe()
    written = [path.name for path in tmp_path.iterdir() if path.name not in ("logs", "home")]
    if written:
        healed(sim, tmp_path, "--no-models")
    # else the run stopped before it wrote anything (no warehouse, lock, working or dlt
    # folder): the next run is a first run, as in every other sync test


# --- during the walk, the load, the model build, the snapshot and its page ---------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_walk_records_every_table_and_the_rerun_converges(
    sim: SimulatorHandle, tmp_path: Path, signum: int
) -> None:
    """Requests are held at the simulator's gate, so the walk is certainly under way; the run
    stops cooperatively: every table recorded in `_sync_runs`, the line naming what was not
    loaded."""
    sim.set_gate(True)
    try:
        run = start(sim, tmp_path, "--no-models")
        result = interrupted(run, lambda: sim.gate()["held"] >= 1, signum, "its walk")
    finally:
        sim.set_gate(False)
    line = the_line(result, signum)
    assert "during the sync" in line and "not loaded: " in line, result.describe()
    runs = sync_runs(tmp_path / "w.duckdb")
    assert sorted(row["resource"] for row in runs) == sorted(ALL_TABLES), runs
    statuses = {row["resource"]: row["status"] for row in runs}
    assert "interrupted" in statuses.values() and set(statuses.values()) <= {
        "success",
        "interrupted",
    }, statuses
    for table, status in statuses.items():
        if status == "interrupted":
            assert re.search(rf"\b{table}\b", line), f"{table}: {result.describe()}"
    healed(sim, tmp_path, "--no-models")


def test_a_signal_during_the_load_ends_the_json_events_with_it(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    """Once the first table's load committed (its `table` event); in JSON the line is the
    `error` event, before the summary, and stderr stays empty."""
    run = start(sim, tmp_path, "--no-models", "--log-format", "json")
    loaded = lambda: '"event": "table"' in _read(run.out_path)  # noqa: E731
    result = interrupted(run, loaded, signal.SIGINT, "a load")
    assert not result.err.strip(), result.describe()
    events = [json.loads(line) for line in result.out.splitlines() if line.strip()]
    assert [event["event"] for event in events[-2:]] == ["error", "summary"], result.describe()
    error, summary = events[-2:]
    assert error["kind"] == "interrupted", error
    assert error["message"].startswith("stopped by SIGINT"), error
    assert (summary["outcome"], summary["exit_code"]) == ("interrupted", EXIT_SIGINT), summary
    assert summary["error"] == error["message"], summary
    healed(sim, tmp_path, "--no-models")


def test_a_signal_during_the_dbt_build_is_one_line_not_dbts_traceback(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    """Once dbt runs its first model (its compiled file written); dbt prints nothing of its
    own, and the next run builds the models."""
    compiled = Target(database=tmp_path / "w.duckdb").sync_dir() / "dbt" / "target" / "run"
    run = start(sim, tmp_path)
    moment = lambda: any(path.is_file() for path in compiled.rglob("*.sql"))  # noqa: E731
    result = interrupted(run, moment, signal.SIGINT, "the dbt build")
    assert "while building dbt models" in the_line(result, signal.SIGINT), result.describe()
    assert "dbt error" not in result.out and "Encountered an error" not in result.out
    healed(sim, tmp_path)


def test_a_signal_while_the_snapshot_and_then_its_dashboard_page_are_written(
    sim: SimulatorHandle, tmp_path: Path
) -> None:
    """First while the BI snapshot's new file is being written, after the model build in the
    same process; the previous snapshot stays as it was and the temporary file goes.

    Then, on the warehouse so healed, a quiet run (no model to rebuild) while it writes the
    dashboard page: the page's temporary file is a FIFO the test holds open without reading,
    so the run waits in the dashboard's write (the page is larger than a pipe holds) until the
    signal; then the test reads what is left, as a file would take it, and the page goes with
    the interrupted snapshot step."""
    run = start(sim, tmp_path)
    moment = lambda: any(tmp_path.glob("w_bi.duckdb.tmp-*"))  # noqa: E731
    result = interrupted(run, moment, signal.SIGINT, "the snapshot")
    assert "while publishing the BI snapshot" in the_line(result, signal.SIGINT), result.describe()
    healed(sim, tmp_path)
    assert (tmp_path / "w_bi.duckdb").is_file() and (tmp_path / "w_bi_dashboard.html").is_file()

    run = start(sim, tmp_path)
    page = tmp_path / f"w_bi_dashboard.html.tmp-{run.pid}"
    try:
        os.mkfifo(page)
        reader = os.open(page, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        run.stop()
        raise
    try:
        writing = lambda: bool(select.select([reader], [], [], 0)[0])  # noqa: E731
        interrupt_at(run, writing, signal.SIGINT, "the dashboard page")
        drain(reader, STOP_BOUND_S)
        result = ended(run, signal.SIGINT)
    finally:
        run.stop()
        os.close(reader)
    assert "while publishing the BI snapshot" in the_line(result, signal.SIGINT), result.describe()
    healed(sim, tmp_path)


def drain(reader: int, bound: float) -> None:
    """Reads the FIFO until its writer closed it (closing flushes what the writer held)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if select.select([reader], [], [], 0.1)[0] and not os.read(reader, 1 << 16):
            return
