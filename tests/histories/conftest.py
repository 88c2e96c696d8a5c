"""Where the histories keep their warehouse: a DuckDB folder, or a database of a real
PostgreSQL server on 127.0.0.1 (one per test module, stopped by its own handle)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.postgres import create_database, running_postgres

from .world import Place


@pytest.fixture(scope="module")
def postgres_histories() -> Iterator[str]:
    """A database for histories on a PostgreSQL server of this module's."""
    with running_postgres() as server:
        create_database(server, "histories")
        yield server.dsn("histories")


@pytest.fixture(params=["duckdb", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    """Each warehouse in turn; dlt reads the PostgreSQL credentials from its usual variable."""
    if request.param == "duckdb":
        return Place("duckdb", tmp_path)
    dsn: str = request.getfixturevalue("postgres_histories")
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", dsn)
    return Place("postgres", tmp_path, dsn)
