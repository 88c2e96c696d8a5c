"""Kill -9 while events are spooled, segments rotate, batches are applied and applied
segments are removed: no acknowledged event is lost, and none is applied twice except the one
batch whose commit the kill beat the applied mark to (harmless in the warehouse: a version
held is not newer and `_webhook_events` merges on `delivery_id`). The mark names its segment,
so it stays valid while older segments are removed under it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from testkit.simulator_process import stop_process

from .cli_helpers import REPO

pytestmark = pytest.mark.slow

EVENTS = 20_000
KILL_AFTER_ACKS = 1500
CHILD = [sys.executable, "-m", "tests.pipelines.spool_crash_child"]


def _committed(path: Path) -> list[list[str]]:
    """The committed batches; a torn last line is a commit the kill interrupted (none)."""
    batches = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line.endswith(b"\n"):
            batches.append(json.loads(line))
    return batches


@pytest.mark.parametrize("kill_after", [KILL_AFTER_ACKS, KILL_AFTER_ACKS * 2])
def test_kill_9_while_spooling_rotating_and_applying(
    tmp_path: Path, kill_after: int, capsys: pytest.CaptureFixture[str]
) -> None:
    spool, committed = tmp_path / "spool", tmp_path / "committed.jsonl"
    acked: list[str] = []
    enough = threading.Event()
    process = subprocess.Popen(
        [*CHILD, str(spool), str(committed), "write", str(EVENTS)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )

    def read_acks() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            acked.append(line.split()[1])
            if len(acked) >= kill_after:
                enough.set()

    reader = threading.Thread(target=read_acks, daemon=True)
    reader.start()
    try:
        assert enough.wait(timeout=120), f"only {len(acked)} acknowledged"
        process.kill()
        process.wait(timeout=30)
    finally:
        stop_process(process)
    reader.join(timeout=30)
    if process.stdout is not None:
        process.stdout.close()
    assert len(acked) < EVENTS, "the kill came after the writer ended"

    started = time.monotonic()
    drain = subprocess.run(
        [*CHILD, str(spool), str(committed), "drain"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert drain.returncode == 0, drain.stderr
    assert time.monotonic() - started < 120
    batches = _committed(committed)
    applied = Counter(delivery_id for batch in batches for delivery_id in batch)
    assert set(acked) <= set(applied), "an acknowledged event was never applied"
    twice = {delivery_id for delivery_id, count in applied.items() if count > 1}
    assert all(count <= 2 for count in applied.values())
    assert not twice or any(twice == set(batch) for batch in batches), twice
    assert "duplicate True" in drain.stdout, drain.stdout
    assert "segments 1" in drain.stdout, drain.stdout
    with capsys.disabled():
        print(
            f"\nkill -9 while applying: acknowledged {len(acked)}, applied {len(applied)} in"
            f" {len(batches)} batches, {len(twice)} applied twice, id lists"
            f" {len(list(spool.glob('*.ids')))}"
        )
