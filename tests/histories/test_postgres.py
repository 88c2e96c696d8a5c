"""Generated histories on PostgreSQL: each history a dataset of its own in one database of a
real server on 127.0.0.1 (docs/reliability.md, "Generated histories")."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.postgres import create_database, running_postgres

from .machine import Setting
from .profiles import SUITE, run_histories
from .world import Place

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_generated_histories_hold_on_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_postgres() as server:
        create_database(server, "histories")
        dsn = server.dsn("histories")
        monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", dsn)
        setting = Setting(Place("postgres", tmp_path / "histories", dsn), tmp_path / "dbt")
        run_histories(setting, SUITE)
    print(setting.tally)
    assert setting.tally.histories >= 1 and setting.tally.runs > setting.tally.histories
