"""`python -m bench ...` run as a user runs it: from the repository, in a process of its own,
with the repository on the path. The benchmark smoke tests share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_bench(arguments: Sequence[str], output: Path, timeout: float) -> tuple[dict[str, Any], str]:
    """Runs the benchmark with `--output output`; returns its result document and all it printed
    (stdout, then stderr) once it exited 0; otherwise the assertion shows the end of both."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    completed = subprocess.run(
        [sys.executable, "-m", "bench", *arguments, "--output", str(output)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return json.loads(output.read_text()), completed.stdout + completed.stderr
