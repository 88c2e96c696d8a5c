"""Fixtures of the chaos suite: the results collector and its summary."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .child import Zygote, start_zygote
from .results import REPORT_ENV, RESULTS_FILE, ChaosResults, format_table, read_tries, tally
from .results import write_report as _write_report


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """The session's temp root, the same for every pytest-xdist worker and the controller."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def chaos_results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChaosResults]:
    results = ChaosResults(_shared_root(tmp_path_factory) / RESULTS_FILE)
    yield results
    report = os.environ.get(REPORT_ENV)
    if report:
        # each worker rewrites it from every try so far; the last one to finish has them all
        _write_report(results.path, Path(report))


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """Forks child syncs that skip the second of imports a fresh interpreter needs."""
    handle = start_zygote(tmp_path_factory.mktemp("zygote"))
    yield handle
    handle.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return
    path = factory.getbasetemp() / RESULTS_FILE
    tries = read_tries(path)
    if not tries:
        return
    terminalreporter.section("chaos results")
    terminalreporter.write_line(format_table(tally(tries)))
    terminalreporter.write_line(f"(tries: {path})")
    report = os.environ.get(REPORT_ENV)
    if report:
        _write_report(path, Path(report))
        terminalreporter.write_line(f"written to {report}")
