"""Suite-wide isolation (dlt's data folder lives in pytest's temporary folder) and the order
in which files start.

As root dlt ignores HOME and uses /var/dlt; a run started in-process by a test (the CLI's
`main`, the demo) would otherwise leave its `drone_ops` link for dlt's tooling, or a server
destination's working folder, on the machine. Subprocess runs get their own folder from
tests/pipelines/cli_helpers.py."""

from __future__ import annotations

import compileall
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _dlt_data_dir_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLT_DATA_DIR", str(tmp_path_factory.mktemp("dlt-data")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _cli_zygote_closed() -> Iterator[None]:
    """The zygote that `run_cli` forks its commands from, when a test started it, is ended
    with the session, by its own handle."""
    yield
    from tests.pipelines.cli_helpers import close_cli_zygote

    close_cli_zygote()


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    """SIGINT and SIGTERM as they were before each test. An in-process Dagster run leaves
    SIGTERM set to SIGINT's handler (`dagster._utils.interrupts`), and an ignored disposition is
    inherited by every process the worker starts later: a worker found ignoring both once
    started CPU hogs that outlived `terminate()` (tests/bench/test_busy.py)."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


# With `--dist loadfile` each file runs whole on one worker, so a long file that starts last runs
# alone at the end while the other core idles. Long end-to-end files go first and the quick unit
# files last, where they fill in: the suite then ends with every worker busy. The named files are
# the longest (minutes each: many syncs, the Dagster story, dbt builds, the wheel
# installed into a fresh venv, ruff and mypy over the tree); the folders hold the other
# end-to-end files. Order by name, not by recorded durations: what is long changes slowly.
_LONGEST_FIRST = (
    "tests/pipelines/test_unattended.py",
    "tests/pipelines/test_delivery_waves_e2e.py",
    "tests/orchestration/test_fleet_e2e.py",
    "tests/models/test_workspaces.py",
    "tests/test_code_quality.py",
    "tests/packaging/test_wheel.py",
    "tests/chaos/",
    "tests/histories/",
    "tests/pipelines/",
    "tests/orchestration/",
    "tests/deploy/",
    "tests/models/",
    "tests/bench/",
)


def _start_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    for rank, prefix in enumerate(_LONGEST_FIRST):
        if path.startswith(prefix):
            return rank
    return len(_LONGEST_FIRST)


_REPO = Path(__file__).resolve().parent.parent
_OUR_CODE = ("pipelines", "sources", "orchestration", "simulator", "testkit", "bench", "tests")
"""What the suite's own processes import from the checkout (an editable install reads it here)."""


def pytest_configure(config: pytest.Config) -> None:
    """xdist (3.x) hands `--dist loadfile` files out largest test count first unless told not
    to, which would undo the order below and put the long few-test end-to-end files last.

    Our code's bytecode is written once, before any worker starts: the suite starts hundreds
    of processes (simulators, `drone-sync` commands, fleet workers), and where the environment
    forbids writing bytecode (`PYTHONDONTWRITEBYTECODE`) each would compile again every module
    of ours it imports."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if not hasattr(config, "workerinput"):
        for folder in _OUR_CODE:
            compileall.compile_dir(_REPO / folder, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_start_rank)
