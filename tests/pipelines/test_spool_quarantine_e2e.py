"""A bad record never wedges the receiver's applier, over real HTTP on 127.0.0.1.

Two bad records sit after the applied mark: a whole-JSON line with a field of the wrong type
(`"received_at": "17956x"`, as a damaged disk or an older writer could leave) and an event the
receiver accepted but the applier cannot turn into rows (a `timestamp` no clock can show).
Before the quarantine, the first made every tick fail with the same `ValueError`, across
restarts, while new events were still acknowledged and never applied. Now both are moved to
`quarantine.jsonl` with their segment and line number, one warning each, counted once on
`/health` (a restart does not count them again), and the events after them are applied.

The warehouse is synced once first, from the tiny simulator: events wait in the spool until a
workspace's first run has made its tables (docs/events.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from drone_ops_sync.pipelines.run.lock import access_lock
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import cli_env, closed_loopback_port
from .listen_process import applying_listener, event, post

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WAIT_S = 60.0
"""Generous: the suite must pass beside two CPU hogs."""


@contextmanager
def applying_receiver(tmp_path: Path, name: str) -> Iterator[str]:
    """`drone-sync listen` applying every 0.3 s to `tmp_path/w.duckdb`, its spool in
    `tmp_path/spool`; stopped by its own handle."""
    env = cli_env(tmp_path, base_url=f"http://127.0.0.1:{closed_loopback_port()}", api_key="k")
    spool = tmp_path / "spool"
    with applying_listener(tmp_path, env, 0.3, name, spool=spool) as (url, _):
        yield url


def wait_for(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {WAIT_S:g} s: {what}")


def project_event(delivery_id: str, name: str, updated: int, **overrides: Any) -> dict[str, Any]:
    data = {"id": "prj_q", "name": name, "updated": updated}
    return event(delivery_id, data=data, **overrides)


def synced(database: Path, sim: SimulatorHandle) -> None:
    """One run into `database`, so the receiver finds the tables its batches write."""
    config = read_source_config({"base_url": sim.base_url, "api_key": sim.read_key})
    assert run_sync(Target(database=database), config=config).ok


def names(database: Path) -> dict[str, str]:
    """The current project names, read under the sync's access lock."""
    with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(
            "SELECT id, name FROM drone_ops.projects WHERE _dlt_valid_to IS NULL"
        ).fetchall()
    return {str(pid): str(name) for pid, name in rows}


def active_segment(spool: Path) -> Path:
    """The spool file events are appended to now (the newest segment)."""
    files = [p for p in spool.glob("events*.jsonl")]
    assert files, sorted(spool.iterdir())
    return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name))


def health(url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{url}/health", timeout=10).json())


def test_a_bad_record_is_quarantined_once_and_later_events_are_applied(
    tmp_path: Path, tiny_sim: SimulatorHandle
) -> None:
    database = tmp_path / "w.duckdb"
    spool = tmp_path / "spool"
    synced(database, tiny_sim)
    with applying_receiver(tmp_path, "first") as url, httpx.Client(timeout=10) as client:
        assert post(client, url, project_event("dlv_a", "first", 1000), None).status_code == 202
        wait_for(lambda: names(database).get("prj_q") == "first", "the first event applied")
        # accepted (an int is an int), but no datetime holds it: the applier rejects it
        far = project_event("dlv_far", "far", 1500, timestamp=10**30)
        assert post(client, url, far, None).status_code == 202
    # a whole line whose field has the wrong type, after the applied mark (line 3 of the file)
    segment = active_segment(spool)
    bad = {"received_at": "17956x", "signed": False, "event": event("dlv_bad")}
    with segment.open("ab") as file:
        file.write(json.dumps(bad).encode() + b"\n")

    with applying_receiver(tmp_path, "second") as url, httpx.Client(timeout=10) as client:
        assert post(client, url, project_event("dlv_b", "second", 2000), None).status_code == 202
        wait_for(lambda: names(database).get("prj_q") == "second", "the event after them")
        shown = wait_for(lambda: health(url).get("quarantined"), "/health counting them")
        assert shown == 2, health(url)
    lines = (spool / "quarantine.jsonl").read_text().splitlines()
    quarantined = [json.loads(line) for line in lines]
    where = [(q["segment"], q["line"]) for q in quarantined]
    assert where == [(segment.name, 2), (segment.name, 3)]
    assert "timestamp" in quarantined[0]["reason"]
    assert "received_at" in quarantined[1]["reason"] and "17956x" in quarantined[1]["record"]
    # the far event may be quarantined by the first receiver already: one warning each in all
    log = (tmp_path / "first.log").read_text() + (tmp_path / "second.log").read_text()
    warnings = [line for line in log.splitlines() if "quarantined" in line]
    assert len(warnings) == 2, warnings
    assert f"{segment.name} line 2" in warnings[0] and f"{segment.name} line 3" in warnings[1]
    assert "will retry" not in log and "Traceback" not in log

    with applying_receiver(tmp_path, "third") as url, httpx.Client(timeout=10) as client:
        assert health(url)["quarantined"] == 2
        assert post(client, url, project_event("dlv_c", "third", 3000), None).status_code == 202
        wait_for(lambda: names(database).get("prj_q") == "third", "a later event")
        assert health(url)["quarantined"] == 2
    assert "quarantined" not in (tmp_path / "third.log").read_text()
    assert len((spool / "quarantine.jsonl").read_text().splitlines()) == 2
