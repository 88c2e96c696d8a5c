"""Fixtures of the Dagster tests: a fleet of three simulated workspaces over HTTP on 127.0.0.1
(three seeds, so three different workspaces), configured as dlt reads a fleet from the
environment, a Dagster instance on disk with telemetry off, and a real PostgreSQL server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import dagster as dg
import pytest

from testkit.postgres import RunningPostgres, create_database, running_postgres
from testkit.simulator_process import SimulatorHandle, running_simulator

FLEET_SEEDS = {"north": 21, "south": 22, "east": 23}
"""Workspace name and simulator seed: predefined job types share their ids across seeds, so
the ids of two workspaces collide as they do between real workspaces."""


@pytest.fixture(scope="module")
def fleet() -> Iterator[dict[str, SimulatorHandle]]:
    """Three simulated workspaces, each its own API and keys, for the tests of one module."""
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(running_simulator(seed=seed, scale="tiny", admin=True))
            for name, seed in FLEET_SEEDS.items()
        }


def configure_fleet(
    monkeypatch: pytest.MonkeyPatch, fleet: dict[str, SimulatorHandle], keys: dict[str, str]
) -> None:
    """The fleet as a deployment configured only through the environment would name it: the
    workspaces as JSON, each key in its own variable; no top-level (default) workspace."""
    monkeypatch.delenv("SOURCES__DRONE_OPS__BASE_URL", raising=False)
    monkeypatch.delenv("SOURCES__DRONE_OPS__API_KEY", raising=False)
    monkeypatch.setenv(
        "SOURCES__DRONE_OPS__WORKSPACES",
        json.dumps({name: {"base_url": handle.base_url} for name, handle in fleet.items()}),
    )
    for name, key in keys.items():
        monkeypatch.setenv(f"SOURCES__DRONE_OPS__WORKSPACES__{name.upper()}__API_KEY", key)


def make_dagster_home(home: Path, patch: pytest.MonkeyPatch) -> Path:
    """A Dagster instance folder for a test and the processes it starts, telemetry off, its
    storage created here: processes that each found it missing would race to create it."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    patch.setenv("DAGSTER_HOME", str(home))
    patch.setenv("DAGSTER_DISABLE_TELEMETRY", "1")
    with dg.DagsterInstance.get():
        pass
    return home


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_dagster_home(tmp_path / "dagster_home", monkeypatch)


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[RunningPostgres]:
    with running_postgres() as server:
        yield server


def fresh_database(server: RunningPostgres) -> str:
    """A new, empty database on the test server: its connection string."""
    name = f"fleet_{uuid.uuid4().hex[:12]}"
    create_database(server, name)
    return server.dsn(name)
