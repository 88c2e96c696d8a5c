"""Fixtures for end-to-end tests: the real simulator over HTTP on 127.0.0.1, real DuckDB."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.sync import SyncOutcome, Target, run_sync
from simulator.testing import SimulatorHandle, running_simulator


@pytest.fixture
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=7, scale="small", admin=True) as handle:
        yield handle


@pytest.fixture
def tiny_sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=11, scale="tiny", admin=True) as handle:
        yield handle


@pytest.fixture
def target(tmp_path: Path) -> Target:
    return Target(database=tmp_path / "warehouse.duckdb", pipelines_dir=tmp_path / "pipelines")


SyncFn = Callable[..., SyncOutcome]


@pytest.fixture
def sync(target: Target) -> Callable[[SimulatorHandle], SyncFn]:
    """Returns a function that syncs from a given simulator with its read-only key."""

    def bind(handle: SimulatorHandle, **source: Any) -> SyncFn:
        def run(**kwargs: Any) -> SyncOutcome:
            overrides = {"base_url": handle.base_url, "api_key": handle.read_key, **source}
            return run_sync(target, source_overrides=overrides, **kwargs)

        return run

    return bind
