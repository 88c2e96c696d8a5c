"""Generated histories on DuckDB files (docs/reliability.md, "Generated histories")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .machine import Setting
from .profiles import HANG_GUARD_S, SUITE, run_histories
from .world import Place

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(HANG_GUARD_S)]


def test_generated_histories_hold_on_duckdb(tmp_path: Path) -> None:
    setting = Setting(Place("duckdb", tmp_path / "histories"), tmp_path / "dbt")
    run_histories(setting, SUITE)
    print(setting.tally)
    assert setting.tally.histories >= 1 and setting.tally.runs > setting.tally.histories
