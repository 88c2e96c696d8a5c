"""`python -m bench.histories` at its smallest, run as a user runs it: one short history on
DuckDB, and the report says what ran and that none failed. No timing assertions."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .command import REPO_ROOT


@pytest.mark.slow
def test_the_long_profile_reports_what_ran() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    arguments = ["--warehouses", "duckdb", "--histories", "1", "--steps", "3", "--no-as-of"]
    completed = subprocess.run(
        [sys.executable, "-m", "bench.histories", *arguments],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    duckdb = next(line.split() for line in lines if line.startswith("duckdb"))
    assert int(duckdb[1]) == 1 and int(duckdb[2]) >= 1, completed.stdout
    assert lines[-1].startswith("1 history on duckdb in ") and lines[-1].endswith("none failed")
