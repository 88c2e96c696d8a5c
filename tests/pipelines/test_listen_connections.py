"""The event applier keeps the DuckDB file open while events keep coming, and hands it over.

Against a synced warehouse, with a real spool fed for the whole test: while the applier holds
the file between its batches, a program that does not take the access lock cannot open it;
another process that waits for the access lock (as every step of a run does) gets the file and
reads it while the events keep coming (the hold limit is set out of reach, so only its waiting
can have freed the file); once the events stop, the file is free to anyone, and every event fed
was applied. And a whole run while events keep coming completes, on DuckDB and PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from drone_ops_sync.pipelines.listen import apply
from drone_ops_sync.pipelines.listen.apply import Applier
from drone_ops_sync.pipelines.listen.spool import Spool
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import wait_until
from .warehouse_check import Warehouse, query

pytestmark = pytest.mark.e2e

WAIT_S = 120.0
"""A bound for a stuck step, not a pace."""

READ_IN_TURN = (
    "import sys, duckdb; from pathlib import Path;"
    " from drone_ops_sync.pipelines.run.lock import access_lock\n"
    "with access_lock(Path(sys.argv[1])), duckdb.connect(sys.argv[1], read_only=True) as con:\n"
    "    print(con.execute('SELECT count(*) FROM drone_ops.projects').fetchone()[0], flush=True)"
)
"""A step of a run, as another process: waits for the access lock, then opens the file."""


OPEN_IGNORING_LOCK = "import duckdb, sys; duckdb.connect(sys.argv[1], read_only=True).close()"


def _opens(database: Path) -> bool:
    """Whether a program that knows nothing of the access lock (another process, as a BI tool
    or a notebook is) can open the file now."""
    opened = subprocess.run(
        [sys.executable, "-c", OPEN_IGNORING_LOCK, str(database)],
        capture_output=True,
        timeout=WAIT_S,
        check=False,
    )
    return opened.returncode == 0


def _warehouse(target: Target) -> Warehouse:
    if target.destination == "postgres":
        return os.environ["DESTINATION__POSTGRES__CREDENTIALS"]
    assert target.database is not None
    return target.database


class Feeder:
    """Appends a newer version of one of the projects to the spool every 50 ms until
    stopped, so every tick of the applier has a batch."""

    def __init__(self, spool: Spool, projects: list[dict[str, Any]]) -> None:
        self.spool = spool
        self.projects = projects
        self.fed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT_S)

    def _feed(self) -> None:
        while not self._stop.wait(0.05):
            project = dict(self.projects[self.fed % len(self.projects)])
            self.fed += 1
            project["updated"] = int(project["updated"]) + self.fed
            project["name"] = f"fed {self.fed}"
            event = {
                "delivery_id": f"d_{self.fed}",
                "event": "project.updated",
                "timestamp": project["updated"],
                "workspace_id": "ws_test",
                "data": project,
            }
            self.spool.append(event, int(time.time() * 1000), True)


def test_the_applier_keeps_the_file_between_batches_and_hands_it_to_a_waiting_step(
    tiny_sim: SimulatorHandle, target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides = {"base_url": tiny_sim.base_url, "api_key": tiny_sim.read_key}
    assert run_sync(target, config=read_source_config(overrides)).ok
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
        projects = api.get("/v1/projects").json()["projects"]
    database = target.database
    assert database is not None
    monkeypatch.setattr(apply, "HOLD_SECONDS", 3600.0)
    spool = Spool(tmp_path / "spool")
    applier = Applier(target, spool, interval=0.2)
    try:
        with Feeder(spool, projects) as feeder:
            applier.start()
            assert wait_until(lambda: applier.stats.batches >= 2, WAIT_S)
            # held between batches: a program that ignores the lock is kept out
            assert wait_until(lambda: not _opens(database), WAIT_S)
            step = subprocess.run(
                [sys.executable, "-c", READ_IN_TURN, str(database)],
                capture_output=True,
                text=True,
                timeout=WAIT_S,
                check=False,
            )
            assert step.returncode == 0, step.stderr[-2000:]
            assert int(step.stdout) >= len(projects)
            batches_before = applier.stats.batches
            assert wait_until(lambda: applier.stats.batches > batches_before, WAIT_S)
            assert applier.stats.last_error is None
        # events stopped: the next tick finds nothing and lets the file go
        assert wait_until(lambda: _opens(database), WAIT_S)
        outcomes = applier.stats.outcomes
        assert wait_until(lambda: sum(outcomes.values()) == feeder.fed, WAIT_S)
        assert outcomes.get("applied", 0) >= 1
    finally:
        applier.stop()
        spool.close()


def test_a_run_between_kept_batches_completes_on_both_destinations(
    tiny_sim: SimulatorHandle, any_target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole run while events keep coming: on DuckDB each of its steps gets the file from
    the applier that keeps it; on PostgreSQL the kept connection and the run's loads take
    the write lock one after the other. Every event fed is counted, and no project ends up with two
    current rows."""
    overrides = {"base_url": tiny_sim.base_url, "api_key": tiny_sim.read_key}
    config = read_source_config(overrides)
    assert run_sync(any_target, config=config).ok
    headers = {"Authorization": f"Bearer {tiny_sim.full_key}"}
    with httpx.Client(base_url=tiny_sim.base_url, headers=headers, timeout=60) as api:
        projects = api.get("/v1/projects").json()["projects"]
    monkeypatch.setattr(apply, "HOLD_SECONDS", 3600.0)
    spool = Spool(tmp_path / "spool")
    applier = Applier(any_target, spool, interval=0.2)
    outcome: list[bool] = []
    try:
        with Feeder(spool, projects) as feeder:
            applier.start()
            assert wait_until(lambda: applier.stats.batches >= 2, WAIT_S)
            run = threading.Thread(
                target=lambda: outcome.append(run_sync(any_target, config=config).ok)
            )
            run.start()
            run.join(WAIT_S)
            assert outcome == [True]
            batches_before = applier.stats.batches
            assert wait_until(lambda: applier.stats.batches > batches_before, WAIT_S)
        outcomes = applier.stats.outcomes
        assert wait_until(lambda: sum(outcomes.values()) == feeder.fed, WAIT_S)
    finally:
        applier.stop()
        spool.close()
    current = query(
        _warehouse(any_target),
        f"SELECT id, count(*) AS n FROM {any_target.dataset}.projects"
        " WHERE _dlt_valid_to IS NULL GROUP BY id HAVING count(*) > 1",
    )
    assert current == []
