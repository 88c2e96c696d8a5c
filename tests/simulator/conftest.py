"""Shared fixtures: a real simulator over HTTP on 127.0.0.1, stopped by its own handle."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

ANCHOR = "2026-06-01"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    """A tiny workspace per test module, so modules can mutate state independently."""
    with running_simulator(seed=42, scale="tiny", extra_args=("--anchor-date", ANCHOR)) as h:
        yield h


@pytest.fixture(scope="module")
def full(sim: SimulatorHandle) -> Iterator[httpx.Client]:
    with sim.client(full=True) as c:
        yield c


@pytest.fixture(scope="module")
def read(sim: SimulatorHandle) -> Iterator[httpx.Client]:
    with sim.client(full=False) as c:
        yield c
