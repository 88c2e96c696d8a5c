"""The one command docs/fleet.md gives for `dagster dev`, run from the repository root: the
webserver answers on 127.0.0.1, the code location loads with no error (its job, schedule and
sensors), and no process of it connects beyond loopback. Only the instance folder differs from
the documented command (a copy of .dagster/dagster.yaml in a temporary folder, so the test
writes nothing into the repository) and the port (a free one)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.orchestration.alerts import ALERT_SENSOR_NAME
from drone_ops_sync.orchestration.automation import (
    MODELS_SENSOR_NAME,
    SYNC_JOB_NAME,
    SYNC_SCHEDULE_NAME,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEV_COMMAND = (
    'DAGSTER_HOME="$PWD/.dagster" DAGSTER_DISABLE_TELEMETRY=1 .venv/bin/dagster dev'
    " -h 127.0.0.1 -p 3000"
)
NETGUARD = REPO / "tests" / "pipelines" / "netguard"
DEV_ARGUMENTS = ("dev", "-h", "127.0.0.1", "-p")
STARTUP_SECONDS = 600.0  # a bound for a server that never comes up, not a pace
WORKSPACE_QUERY = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message }
    ... on RepositoryLocation { repositories { jobs { name } schedules { name }
      sensors { name sensorState { status } } } } } } } } }"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def graphql(base: str, query: str) -> Any:
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["data"]


def loaded_location(base: str, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The code location once the webserver answers and has loaded it (or failed to)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"dagster dev exited with {process.returncode}"
        try:
            entries = graphql(base, WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
        except OSError:
            entries = []
        if entries and entries[0]["loadStatus"] == "LOADED":
            location: dict[str, Any] = entries[0]
            return location
        time.sleep(1)
    raise AssertionError(f"dagster dev did not serve a loaded code location in {STARTUP_SECONDS}s")


def test_the_documented_dagster_dev_command_serves_the_code_location(tmp_path: Path) -> None:
    assert DEV_COMMAND in (REPO / "docs" / "fleet.md").read_text(encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / ".dagster" / "dagster.yaml", home / "dagster.yaml")
    netguard_log = tmp_path / "netguard.log"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": str(NETGUARD),
        "DRONE_SYNC_NETGUARD_LOG": str(netguard_log),
    }
    port = free_port()
    dagster = Path(sys.executable).with_name("dagster")
    with open(tmp_path / "dagster-dev.log", "wb") as log:
        # started as from a terminal, where SIGINT, SIGQUIT and SIGTERM have their default
        # meaning, not with what the worker happens to ignore as it starts the process:
        # `dagster dev` keeps an ignored SIGINT (and maps SIGTERM onto it), so the SIGINT below
        # would go unheard
        process = subprocess.Popen(
            ["env", "--default-signal=INT,QUIT,TERM", str(dagster), *DEV_ARGUMENTS, str(port)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            location = loaded_location(f"http://127.0.0.1:{port}", process)
        finally:
            # Ctrl-C in a terminal: SIGINT to the whole process group, the webserver and the
            # daemon with it, not to `dagster dev` alone
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    assert location["name"] == "drone_ops"
    [repository] = location["locationOrLoadError"]["repositories"]
    assert SYNC_JOB_NAME in {job["name"] for job in repository["jobs"]}
    assert [schedule["name"] for schedule in repository["schedules"]] == [SYNC_SCHEDULE_NAME]
    sensors = {sensor["name"]: sensor["sensorState"]["status"] for sensor in repository["sensors"]}
    assert sensors == {MODELS_SENSOR_NAME: "RUNNING", ALERT_SENSOR_NAME: "RUNNING"}
    attempts = netguard_log.read_text(encoding="utf-8") if netguard_log.exists() else ""
    assert not attempts, f"connections beyond loopback were attempted:\n{attempts}"
    assert not (home / "logs").exists(), "Dagster's telemetry wrote nothing"
