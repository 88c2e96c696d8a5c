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


# The webhook sender's tests: no generated webhooks (only the tests' own receive anything), one
# signing secret, and retries quick enough for a test (1 + 4 attempts over 3.7 s).
SECRET = "whsec_c2VuZGVyLXRlc3Qta2V5LTAxMjM0NTY3ODlhYg=="
RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0)


@pytest.fixture(scope="module")
def signed_sim() -> Iterator[SimulatorHandle]:
    args = ["--anchor-date", ANCHOR, "--webhooks", "0", "--webhook-secret", SECRET]
    args += ["--delivery-retry-delays", ",".join(map(str, RETRY_DELAYS))]
    args += ["--delivery-timeout", "1"]
    with running_simulator(seed=11, extra_args=args) as h:
        yield h


@pytest.fixture(scope="module")
def signed_api(signed_sim: SimulatorHandle) -> Iterator[httpx.Client]:
    with signed_sim.client(full=True) as c:
        yield c
