"""The `drone-sync` process's exit (`pipelines/console_script.py`): without the interpreter's
teardown, yet with the exit code, everything written, the `atexit` handlers run, and a thread
still running waited for. Each case is a fresh interpreter, since the exit ends it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WRITES_AND_EXITS = """
import atexit, logging, sys
from drone_ops_sync.pipelines.console_script import exit_now
handler = logging.FileHandler(sys.argv[1], delay=True)
logging.getLogger("probe").addHandler(handler)
logging.getLogger("probe").warning("logged before the exit")
atexit.register(lambda: print("atexit ran"))
sys.stdout.write("x" * 200_000)
sys.stdout.write("\\n")
exit_now(3)
"""
THREAD_STILL_RUNNING = """
import sys, threading
from pathlib import Path
from drone_ops_sync.pipelines.console_script import exit_now
started = threading.Event()
def late() -> None:
    started.set()
    threading.Event().wait(0.5)
    Path(sys.argv[1]).write_text("written by the thread")
threading.Thread(target=late).start()
started.wait(60)
exit_now(4)
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_exit_keeps_the_code_the_output_the_log_and_the_atexit_handlers(
    tmp_path: Path,
) -> None:
    log = tmp_path / "probe.log"
    done = _run(WRITES_AND_EXITS, str(log))
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 200_000
    assert lines[1] == "atexit ran"
    assert log.read_text() == "logged before the exit\n"


def test_a_thread_still_running_is_waited_for(tmp_path: Path) -> None:
    written = tmp_path / "late.txt"
    done = _run(THREAD_STILL_RUNNING, str(written))
    assert done.returncode == 4, done.stderr
    assert written.read_text() == "written by the thread"
