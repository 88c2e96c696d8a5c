"""Fixtures for end-to-end tests: the real simulator over HTTP on 127.0.0.1, real DuckDB and a
real PostgreSQL server on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.postgres import RunningPostgres, create_database, running_postgres
from testkit.simulator_process import SimulatorHandle, running_simulator


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
            return run_sync(target, config=read_source_config(overrides), **kwargs)

        return run

    return bind


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[RunningPostgres]:
    """One real PostgreSQL server per test process, on 127.0.0.1, stopped at the end."""
    with running_postgres() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: RunningPostgres) -> str:
    """A fresh, empty database on the test server: tests never see each other's tables."""
    name = f"warehouse_{uuid.uuid4().hex[:12]}"
    create_database(postgres_server, name)
    return postgres_server.dsn(name)


@pytest.fixture
def postgres_target(postgres_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    """A postgres target whose credentials come through dlt's usual environment variable."""
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", postgres_dsn)
    return Target(destination="postgres", pipelines_dir=tmp_path / "pg-pipelines")


@pytest.fixture(params=["duckdb", "postgres"])
def any_target(request: pytest.FixtureRequest, target: Target) -> Target:
    """The DuckDB target, or a fresh PostgreSQL database on the test server: a test asking
    for it runs on both tested destinations."""
    if request.param == "duckdb":
        return target
    postgres: Target = request.getfixturevalue("postgres_target")
    return postgres
