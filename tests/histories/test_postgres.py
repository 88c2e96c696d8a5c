"""Generated histories on PostgreSQL: a real server on 127.0.0.1, the histories' dataset in one
database of it (docs/reliability.md, "Generated histories")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .machine import Setting
from .profiles import HANG_GUARD_S, SUITE, run_histories
from .world import Place

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_S)]


def test_generated_histories_hold_on_postgres(
    postgres_histories: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", postgres_histories)
    place = Place("postgres", tmp_path / "histories", postgres_histories)
    setting = Setting(place, tmp_path / "dbt")
    run_histories(setting, SUITE)
    print(setting.tally)
    assert setting.tally.histories >= 1 and setting.tally.runs > setting.tally.histories
