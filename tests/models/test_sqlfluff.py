"""sqlfluff lints every model with the project's models/.sqlfluff (dbt templater)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR

MODEL_PATHS = ("staging", "intermediate", "marts")


def test_models_pass_sqlfluff(tmp_path: pathlib.Path) -> None:
    """`sqlfluff lint` as docs/models.md runs it; dbt's target and logs go to a temporary folder
    (the dbt templater compiles the project against an empty DuckDB file there)."""
    env = {
        **os.environ,
        "DRONE_SYNC_DUCKDB_PATH": str(tmp_path / "lint.duckdb"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "logs"),
    }
    completed = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", *MODEL_PATHS, "--format", "json"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.stdout.strip(), completed.stderr
    files = json.loads(completed.stdout)
    linted = {pathlib.Path(entry["filepath"]).stem for entry in files}
    models = {path.stem for folder in MODEL_PATHS for path in (PROJECT_DIR / folder).rglob("*.sql")}
    assert linted == models
    violations = [
        f"{entry['filepath']}:{found['start_line_no']} {found['code']} {found['description']}"
        for entry in files
        for found in entry["violations"]
    ]
    assert violations == [], "\n".join(violations)
    assert completed.returncode == 0, completed.stderr
