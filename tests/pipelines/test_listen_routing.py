"""Routing received events to workspaces by the `workspace_id` their synced delivery logs
carry: a workspace with no logs yet is skipped, but a warehouse that cannot be read right now
stops the batch (it stays in the spool and is tried again) instead of counting its events as
belonging to no workspace, which would move the applied mark past them for good."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from drone_ops_sync.pipelines.listen.apply import FileHeld, Router
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops.internal import UNROUTED, ReceivedEvent

HOLD_THE_FILE = (
    "import duckdb, sys; connection = duckdb.connect(sys.argv[1]);"
    " print('holding', flush=True); sys.stdin.read()"
)


def _event(workspace_id: str) -> ReceivedEvent:
    event = {"delivery_id": f"d_{workspace_id}", "event": "project.updated"}
    return ReceivedEvent({**event, "workspace_id": workspace_id}, 0, signed=True)


def test_events_wait_while_a_warehouse_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces = {name: {"base_url": "http://127.0.0.1:9"} for name in ("acme", "bolt")}
    monkeypatch.setenv("SOURCES__DRONE_OPS__WORKSPACES", json.dumps(workspaces))
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as connection:
        # acme has synced its delivery logs; bolt has not synced at all yet
        connection.execute("CREATE SCHEMA drone_ops_acme")
        connection.execute("CREATE TABLE drone_ops_acme.webhook_deliveries (workspace_id TEXT)")
        connection.execute("INSERT INTO drone_ops_acme.webhook_deliveries VALUES ('ws_acme')")
    router = Router(Target(database=database, pipelines_dir=tmp_path / "pipelines"))
    known, stranger = _event("ws_acme"), _event("ws_unknown")
    assert router.route([known, stranger]) == {"acme": [known], UNROUTED: [stranger]}

    # another process holds the file: DuckDB refuses to open it here, so the ids cannot be
    # read again when an event names an id not seen yet
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_FILE, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        # said as the applier says a held file (one line, retried next tick)
        with pytest.raises(FileHeld, match="is open in another process"):
            router.route([_event("ws_bolt")])
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
