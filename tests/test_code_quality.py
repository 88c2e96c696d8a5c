"""The tree stays ruff-formatted, lint-clean and mypy-clean: checked like any other test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["sources", "pipelines", "simulator", "testkit", "bench", "tests"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_ruff_lint_is_clean() -> None:
    result = _run("ruff", "check", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _run("ruff", "format", "--check", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


INSTALLED = ("sources", "pipelines", "simulator", "orchestration", "models")
"""The folders installed as `drone_ops_sync.<folder>` (pyproject.toml's package-dir)."""


@pytest.mark.slow
def test_mypy_is_clean(tmp_path: Path) -> None:
    """mypy cannot follow setuptools' editable-install finder, so it reads the installed
    packages through a folder of links laid out as site-packages has them
    (`drone_ops_sync/sources -> sources/`); bench/ and testkit/ are checked in the same
    invocation, so their imports of the installed packages resolve to those links, not to
    Any."""
    namespace = tmp_path / "drone_ops_sync"
    namespace.mkdir()
    for folder in INSTALLED:
        (namespace / folder).symlink_to(REPO / folder, target_is_directory=True)
    packages = [f"drone_ops_sync.{folder}" for folder in INSTALLED[:-1]] + ["testkit", "bench"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--explicit-package-bases",
            *(arg for package in packages for arg in ("-p", package)),
        ],
        cwd=REPO,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
