"""dlt's dashboard (`dlt pipeline <name> show`, the `dashboard` extra) on a warehouse
drone-sync synced, looked at in Debian's headless Chromium: the page loads, names the
warehouse's pipeline, shows the run's loads and the source's tables, and nothing is created
where it was started and nothing but 127.0.0.1 is contacted (dlt's and marimo's processes run
under the netguard; Chromium resolves no other host).

Skipped unless /usr/bin/chromium (`apt-get install chromium`) and the extra (`pip install -e
'.[dashboard]'`) are present: CI installs neither (docs/dlt-tooling.md)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import SimulatorHandle

from .cli_helpers import EXIT_OK, cli_env, closed_loopback_port, run_cli, wait_until
from .headless_browser import CHROMIUM, page_text_and_screenshot

MISSING = [name for name in ("marimo", "ibis", "dlthub") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs the dashboard extra (pip install -e '.[dashboard]'): no {MISSING}",
    ),
]

# the command `dlt pipeline <name> show` runs, with a port, on 127.0.0.1, headless
DASHBOARD = """
import os, sys
from dlt._workspace.helpers.dashboard.runner import run_dashboard_command

command = run_dashboard_command(sys.argv[1], port=int(sys.argv[2]), host="127.0.0.1",
                                headless=True)
os.execvp(command[0], command)
"""


def test_dashboard_shows_the_warehouse(tiny_sim: SimulatorHandle, tmp_path: Path) -> None:
    database = tmp_path / "w" / "warehouse.duckdb"
    env = cli_env(tmp_path, base_url=tiny_sim.base_url, api_key=tiny_sim.read_key)
    synced = run_cli(["run", "--no-models", "--database", str(database)], env, tmp_path)
    assert synced.code == EXIT_OK, synced.describe()
    name = Target(database=database).pipeline_name()

    netguard_log = tmp_path / "netguard.log"
    dashboard_env = cli_env(
        tmp_path,
        netguard_log=netguard_log,
        extra={
            # as docs/dlt-tooling.md says to start it: dlt's telemetry off (the dashboard does
            # not read the repository's .dlt/config.toml) and marimo's update check off
            "RUNTIME__DLTHUB_TELEMETRY": "false",
            "MARIMO_SKIP_UPDATE_CHECK": "1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        },
    )
    started_in = tmp_path / "started_in"
    started_in.mkdir()
    port = closed_loopback_port()
    logs = (tmp_path / "dashboard.log").open("wb")
    dashboard = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(DASHBOARD), name, str(port)],
        cwd=started_in,
        env=dashboard_env,
        stdout=logs,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: _answers(port), timeout=300), _log(tmp_path)
        text = page_text_and_screenshot(
            f"http://127.0.0.1:{port}/",
            [name, "Extract", "Load", "webhook_deliveries"],
            tmp_path / "dashboard.png",
            tmp_path / "chromium-profile",
        )
    finally:
        dashboard.terminate()
        dashboard.wait(timeout=30)
        logs.close()
    assert name in text, text
    assert "webhook_deliveries" in text and "_sync_runs" in text, text
    # the run's loads, one Extract/Normalize/Load per pipeline.run, in the trace it shows
    assert text.count("Extract") >= 3, text
    assert list(started_in.iterdir()) == [], "nothing created where the dashboard started"
    assert not netguard_log.exists() or netguard_log.read_text() == "", netguard_log.read_text()


def _answers(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _log(tmp_path: Path) -> str:
    return (tmp_path / "dashboard.log").read_text(errors="replace")[-4000:]
