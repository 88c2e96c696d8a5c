"""The tree stays ruff-formatted, lint-clean and mypy-clean: checked like any other test."""

from __future__ import annotations

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


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    result = _run("mypy", "sources", "pipelines", "simulator", "testkit", "bench")
    assert result.returncode == 0, result.stdout + result.stderr
