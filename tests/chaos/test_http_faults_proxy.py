"""Faults the simulator cannot inject, from the chaos proxy in front of it: a 429 whose
Retry-After is an HTTP date, requests that hang past the client's timeout, a body dripped
slowly, a JSON body truncated several times in a row, and a 502 on the single-record reads
that confirm deletions. The truth check always reads the simulator directly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle, running_simulator

from .fault_server import (
    FaultServer,
    Proxy,
    Rule,
    hang,
    injected_status,
    retry_after_date,
    slow_drip,
    truncated,
)
from .harness import PATIENT, Warehouse, failed_tables, fault_phases
from .results import ChaosResults
from .truth import message_problems, run_rows

pytestmark = [pytest.mark.e2e]

WORKSPACE = ("--projects", "12", "--jobs-per-project", "6", "--logs-per-webhook", "100")
ANY_GET = r"/v1/.*"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorHandle]:
    with running_simulator(seed=601, scale="small", admin=True, extra_args=WORKSPACE) as handle:
        yield handle


def test_429_with_http_date_is_honoured(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """10% of GETs answer 429 with `Retry-After: <HTTP date>`: the run succeeds, equals the
    API, and no request starts before a date it was given has passed."""
    issued: list[tuple[float, float]] = []
    proxy = Proxy(sim.base_url, [Rule(ANY_GET, 0.10, retry_after_date(2.0, issued))], seed=3)
    with FaultServer(proxy) as server:
        warehouse = Warehouse(tmp_path)
        outcome = warehouse.run(server.base_url, sim.read_key, **PATIENT)
        served = [s for s in server.served if s.status != 429]
    proxy.close()
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind="http-429-date@10%",
        run_ok=outcome.ok,
    )
    assert outcome.ok, failed_tables(outcome)
    assert issued, "the seeded proxy sent at least one 429"
    # a request already on its way when the 429 came back may still arrive: allow 1.5 s. The
    # proxy runs in this process, so its handler threads wait for the GIL behind the sync's
    # walk threads; 1.0 s was seen exceeded on an otherwise idle machine (1.02 s), by requests
    # the client had sent before the 429 reached it. The dates are 2 to 3 s ahead, so a client
    # that ignored them would still be caught
    early = [
        (round(s.at - sent, 2), round(until - s.at, 2))
        for sent, until in issued
        for s in served
        if sent + 1.5 < s.at < until - 0.05
    ]
    assert not early, f"requests made before the Retry-After date passed: {early[:5]}"


def test_requests_that_hang_past_the_timeout_at_rates(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """Requests whose answer comes only after 2 s, with timeout_seconds = 0.5 (well above
    what a request takes on a busy machine, so only the hung ones time out), at 20% and 50%
    of GETs (5% is covered by the simulator's kinds; every timeout costs the walk 0.5 s)."""
    rule = Rule(ANY_GET, 0.0, hang(2.0))
    proxy = Proxy(sim.base_url, [rule], seed=4)

    def switch(rate: float | None) -> None:
        rule.probability = rate or 0.0

    with FaultServer(proxy) as server:
        fault_phases(
            "timeout",
            sim,
            Warehouse(tmp_path),
            chaos_results,
            switch=switch,
            sync_url=server.base_url,
            rates=(0.20, 0.50),
            timeout_seconds=0.5,
        )
    proxy.close()


def test_slow_drip_is_cut_off_by_the_timeout(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """The first team page drips its body over minutes (a chunk every 0.1 s, each well within
    the 1 s timeout; over 4 minutes for a team page of 2.5 kB): the request should be abandoned
    after about the timeout and retried, so the run ends in a few seconds and equals the API.
    The bound (2 minutes, for a busy runner where the run alone takes tens of seconds) tells
    that from waiting for the drip."""
    proxy = Proxy(sim.base_url, [Rule(r"/v1/team", 1.0, slow_drip(600.0), limit=1)])
    warehouse = Warehouse(tmp_path)
    with FaultServer(proxy) as server:
        outcome = warehouse.run(server.base_url, sim.read_key, timeout_seconds=1.0, **PATIENT)
    proxy.close()
    warehouse.check(
        sim.base_url, sim.read_key, results=chaos_results, kind="slow-drip", run_ok=outcome.ok
    )
    assert outcome.ok, failed_tables(outcome)
    assert outcome.total_seconds < 120.0, f"the run took {outcome.total_seconds:.1f}s"


def test_body_truncated_three_times_in_a_row_is_retried(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """The team list is cut short three times in a row, then answers: with max_attempts = 12
    the run succeeds (a cut-off body heals on a retry, like a reset)."""
    proxy = Proxy(sim.base_url, [Rule(r"/v1/team", 1.0, truncated(), limit=3)])
    warehouse = Warehouse(tmp_path)
    with FaultServer(proxy) as server:
        outcome = warehouse.run(server.base_url, sim.read_key, **PATIENT)
    proxy.close()
    if not outcome.ok:
        assert warehouse.run(sim.base_url, sim.read_key).ok
    warehouse.check(
        sim.base_url, sim.read_key, results=chaos_results, kind="truncate-x3", run_ok=outcome.ok
    )
    assert outcome.ok, failed_tables(outcome)


def test_502_on_deletion_checks_fails_only_projects_with_a_named_error(
    sim: SimulatorHandle, tmp_path: Path, chaos_results: ChaosResults
) -> None:
    """A project was deleted; the single-record read that confirms it answers 502 every time.
    Only `projects` (and what depends on it) may fail, with a message naming the table, the
    endpoint and the cause; the other tables load; the next clean run heals."""
    warehouse = Warehouse(tmp_path)
    assert warehouse.run(sim.base_url, sim.read_key).ok
    with sim.client(full=True) as client:
        projects = client.get("/v1/projects").raise_for_status().json()["projects"]
        assert client.delete(f"/v1/projects/{projects[-1]['id']}").status_code == 204
    sim.wait_for_deliveries()
    proxy = Proxy(sim.base_url, [Rule(r"/v1/projects/[^/]+", 1.0, injected_status(502))])
    with FaultServer(proxy) as server:
        outcome = warehouse.run(server.base_url, sim.read_key, max_attempts=2)
    proxy.close()
    failed = failed_tables(outcome)
    rows = run_rows(warehouse.database, warehouse.dataset, outcome.report.run_id)
    problems = [
        problem
        for name, result in outcome.report.tables.items()
        for problem in message_problems(name, result.status, result.error)
    ] + [
        f"_sync_runs: {problem}"
        for row in rows
        for problem in message_problems(row["resource"], row["status"], row["error"])
    ]
    healed = warehouse.run(sim.base_url, sim.read_key)
    warehouse.check(
        sim.base_url,
        sim.read_key,
        results=chaos_results,
        kind="502-on-deletion-check",
        run_ok=outcome.ok,
    )
    assert healed.ok
    assert not outcome.ok and "projects" in failed, failed
    assert not problems, problems
    statuses = {name: result.status for name, result in outcome.report.tables.items()}
    for name in ("job_types", "team_members", "webhooks", "webhook_deliveries"):
        assert statuses.get(name) == "success", statuses
