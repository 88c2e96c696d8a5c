"""An API host's request budget holds across a fleet's worker processes: three workspaces on one
simulator (one host), synced at once by three workers under `max_requests_per_second_per_host`,
never reach the host faster than the budget, counted where the requests arrive."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from testkit.simulator_process import running_simulator

from .cli_helpers import EXIT_OK, TRACEBACK, cli_env, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAMES = ("default", "acme", "zen")
RATE = 5.0
JITTER_SECONDS = 1.0
"""How late a request may arrive after its reserved slot (a busy machine's scheduling):
arrivals may bunch by this much, never more."""


def test_workers_of_a_fleet_share_one_hosts_budget(tmp_path: Path) -> None:
    extra = ["--workspaces", str(len(NAMES))]
    with running_simulator(seed=5, scale="tiny", admin=True, extra_args=extra) as sim:
        sims = {name: sim.workspace(n) for n, name in enumerate(NAMES)}
        named = {name: {"base_url": sims[name].base_url} for name in NAMES[1:]}
        env = cli_env(
            tmp_path,
            base_url=sims["default"].base_url,
            api_key=sims["default"].read_key,
            settings={
                "WORKSPACES": json.dumps(named),
                "WORKSPACES__ACME__API_KEY": sims["acme"].read_key,
                "WORKSPACES__ZEN__API_KEY": sims["zen"].read_key,
                "MAX_REQUESTS_PER_SECOND_PER_HOST": str(RATE),
            },
        )
        args = ["run", "--database", str(tmp_path / "w.duckdb"), "--parallel", "3"]
        result = run_cli([*args, "--no-models"], env, tmp_path, timeout=300)
        assert result.code == EXIT_OK and TRACEBACK not in result.text, result.describe()
        host = sim.base_url.split("/w/")[0]
        one_second = httpx.get(f"{host}/_host/arrivals", params={"window": 1}).json()
        whole = httpx.get(f"{host}/_host/arrivals", params={"window": 3600}).json()
    total = whole["total"]
    assert total >= 3 * RATE, f"too few requests ({total}) to show a budget"
    # slots are 1/RATE apart; only a late arrival can bring two closer
    assert one_second["peak"] <= RATE * (1 + JITTER_SECONDS) + 1, one_second
