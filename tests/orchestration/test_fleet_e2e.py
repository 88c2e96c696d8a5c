"""End to end: three simulated workspaces over HTTP, the Dagster code location's sync partitions
run as Dagster runs them (each run a process of its own, `partition_runs.py`), into a real
PostgreSQL server, then the dbt models materialized by Dagster over all three.

Why PostgreSQL only: what the story shows is Dagster's (partitions run at once, one workspace
never twice at once, a refused key failing its partition alone) and does not depend on the
warehouse; where Dagster on DuckDB is tested instead: docs/development.md, "The suite's shape".

The story is told once by the `story` fixture because each chapter starts from
the warehouse the last one left (and each API is compared right after the run that read it,
before the next change): a first run with one workspace's key refused, a run after fixing the
key and changing every workspace's data, and a quiet run in which one workspace is started
twice at once. The tests then read the chapters.

What must happen at the same time is made to, by conditions rather than the machine's timing:
the simulators' gates hold the API's answers until north's and south's syncs are both waiting
on one (so they overlap), and until the second run of north has been told to wait its turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from drone_ops_sync.orchestration.manifest import prepared_project
from drone_ops_sync.orchestration.models import build_models_assets, dbt_resource
from drone_ops_sync.orchestration.raw_assets import build_sync_assets, workspace_partitions
from drone_ops_sync.orchestration.warehouse import DroneSyncWarehouse
from testkit.postgres import RunningPostgres
from testkit.simulator_process import SimulatorHandle

from ..pipelines.cli_helpers import wait_until
from ..pipelines.warehouse_check import (
    Warehouse,
    api_snapshot,
    current_rows,
    mismatches,
    query,
)
from .conftest import FLEET_SEEDS, configure_fleet, fresh_database, make_dagster_home
from .partition_runs import PartitionRun, run_partitions

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NETGUARD = REPO / "tests" / "pipelines" / "netguard"
NETGUARD_LOG_ENV = "DRONE_SYNC_NETGUARD_LOG"
WAREHOUSE: dict[str, Any] = {"destination": "postgres"}
"""The warehouse resource's settings; the server's address comes from the environment."""
HELD_LIMIT_S = 180.0
"""How long a closed gate may wait for its condition: minutes, a bound for runs that never
come (each run is a Dagster process that may take many seconds to start on a loaded machine)."""


@dataclass
class Story:
    """The warehouse, and what each run of the story did and found."""

    readable: Warehouse
    netguard_log: Path
    runs: dict[str, dict[str, PartitionRun]] = field(default_factory=dict)
    twice: list[PartitionRun] = field(default_factory=list)
    """The quiet chapter's two runs of `north`, started together."""
    mismatches: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def schema_of(workspace: str) -> str:
    return f"drone_ops_{workspace}"


def compare_with_apis(story: Story, fleet: dict[str, SimulatorHandle], chapter: str) -> None:
    """Every workspace's current rows against its own API, in its own schema."""
    found: dict[str, list[str]] = {}
    for name, handle in fleet.items():
        api = api_snapshot(handle.base_url, handle.read_key)
        found[name] = [
            f"{table}: {problem}"
            for table, records in api.items()
            for problem in mismatches(
                records, current_rows(story.readable, table, schema_of(name))
            )[:5]
        ]
    story.mismatches[chapter] = found


@pytest.fixture(scope="module")
def story(
    fleet: dict[str, SimulatorHandle],
    postgres_server: RunningPostgres,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Story]:
    with pytest.MonkeyPatch.context() as patch:
        make_dagster_home(tmp_path_factory.mktemp("dagster_home"), patch)
        # every process started from here on (the runs, dbt) refuses and logs connections
        # that leave loopback
        netguard_log = tmp_path_factory.mktemp("netguard") / "netguard.log"
        patch.setenv("PYTHONPATH", str(NETGUARD))
        patch.setenv(NETGUARD_LOG_ENV, str(netguard_log))
        dsn = fresh_database(postgres_server)
        patch.setenv("DESTINATION__POSTGRES__CREDENTIALS", dsn)
        story = Story(dsn, netguard_log)
        tell(story, fleet, patch)
        yield story


def tell(story: Story, fleet: dict[str, SimulatorHandle], patch: pytest.MonkeyPatch) -> None:
    names = list(fleet)
    keys = {name: handle.read_key for name, handle in fleet.items()}
    configure_fleet(patch, fleet, {**keys, "east": "drone-ops-refused-key"})
    story.runs["refused"] = by_workspace(run_partitions(names, WAREHOUSE))
    compare_with_apis(story, {n: h for n, h in fleet.items() if n != "east"}, "refused")

    configure_fleet(patch, fleet, keys)
    for seed, handle in enumerate(fleet.values(), start=1):
        handle.churn(
            seed=seed, update_fraction=0.2, delete_fraction=0.02, new_deliveries_per_webhook=2
        )
    both = [fleet["north"], fleet["south"]]
    story.runs["churned"] = by_workspace(
        run_partitions(
            names,
            WAREHOUSE,
            meanwhile=held_until(both, lambda: all(h.gate()["held"] for h in both)),
        )
    )
    compare_with_apis(story, fleet, "churned")

    north, retried = fleet["north"], busy_retries("north")
    told_to_wait = held_until(
        [north], lambda: north.gate()["held"] > 0 and busy_retries("north") > retried
    )
    # east's quiet run would show nothing north's and south's do not
    quiet = run_partitions(["north", "north", "south"], WAREHOUSE, meanwhile=told_to_wait)
    story.twice = [run for run in quiet if run.workspace == "north"]
    story.runs["quiet"] = by_workspace(quiet)
    compare_with_apis(story, fleet, "quiet")


def held_until(gates: list[SimulatorHandle], condition: Callable[[], bool]) -> Callable[[], None]:
    """Closes the simulators' gates now; the returned call (run once the runs started) waits
    for the condition, then opens them, whether or not it came."""
    for handle in gates:
        handle.set_gate(True)

    def meanwhile() -> None:
        try:
            assert wait_until(condition, HELD_LIMIT_S, interval=0.2), "the gate's condition"
        finally:
            for handle in gates:
                handle.set_gate(False)

    return meanwhile


def busy_retries(workspace: str) -> int:
    """Steps of a workspace's runs that Dagster put up for retry, in the instance the runs
    share: a run of it that found it busy."""
    with dg.DagsterInstance.get() as instance:
        records = instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.STEP_UP_FOR_RETRY)
        )
        runs = {record.run_id for record in records}
        return sum(
            1
            for run_id in runs
            if (run := instance.get_run_by_id(run_id)) is not None
            and run.tags.get("dagster/partition") == workspace
        )


def by_workspace(runs: list[PartitionRun]) -> dict[str, PartitionRun]:
    """The runs by workspace; of two runs of one workspace, the one that started first."""
    ordered = sorted(runs, key=lambda run: run.interval()[0] if run.success else 0.0)
    return {run.workspace: run for run in reversed(ordered)}


def test_a_refused_key_fails_its_workspace_alone_and_the_next_run_heals_it(story: Story) -> None:
    refused = story.runs["refused"]
    east = refused["east"]
    assert not east.success
    assert east.retries == 0, "a failed sync is not retried: it spent its retry budget already"
    [line] = east.failures
    assert line.startswith("workspace east: ") and "401" in line and "api_key" in line, line
    assert "\n" not in line and "drone-ops-refused-key" not in line
    assert "projects" not in east.tables, "a refused table loaded nothing"
    assert east.tables["_sync_runs"]["workspace"] == "east", "its failure is recorded"
    for name in ("north", "south"):
        assert refused[name].success, refused[name].failures
        assert not story.mismatches["refused"][name]
    healed = story.runs["churned"]["east"]
    assert healed.success and not story.mismatches["churned"]["east"]


def test_each_partition_loads_its_own_workspace_through_its_own_pipeline(story: Story) -> None:
    runs = story.runs["churned"]
    pipelines = {run.tables["projects"]["pipeline_name"] for run in runs.values()}
    assert len(pipelines) == 3, "one dlt pipeline name per partition"
    for name, run in runs.items():
        assert run.success, run.failures
        projects = run.tables["projects"]
        assert projects["workspace"] == name and projects["schema"] == schema_of(name)
        assert projects["status"] == "success" and projects["requests"] > 0
        assert sum(projects[k] for k in ("rows_new", "rows_changed", "rows_retired")) > 0
        assert not story.mismatches["churned"][name], story.mismatches["churned"][name]


def test_a_quiet_run_loads_nothing_and_stays_equal_to_each_api(story: Story) -> None:
    for name, run in story.runs["quiet"].items():
        assert run.success, run.failures
        written = {
            table: (meta["rows_new"], meta["rows_changed"], meta["rows_retired"])
            for table, meta in run.tables.items()
            # the run's record, and the receiver's table the sync only makes sure exists
            if table not in ("_sync_runs", "_webhook_events")
        }
        assert set(written.values()) == {(0, 0, 0)}, written
        assert not story.mismatches["quiet"][name]


def overlap(first: tuple[float, float], second: tuple[float, float]) -> bool:
    return first[0] < second[1] and second[0] < first[1]


def test_different_workspaces_run_at_the_same_time(story: Story) -> None:
    """Measured from the recorded start and end of each sync, not from configuration. The
    churned runs of north and south must overlap (their gates held both until each was
    waiting on its API); the quiet runs are not held, so one may end before another begins."""
    for chapter in ("churned", "quiet"):
        runs = story.runs[chapter]
        intervals = {name: run.interval() for name, run in runs.items()}
        if chapter == "churned":
            assert overlap(intervals["north"], intervals["south"]), (chapter, intervals)
        recorded = query(
            story.readable,
            "SELECT started_at, finished_at FROM drone_ops_north._sync_runs"
            f" WHERE run_id = '{runs['north'].tables['_sync_runs']['sync_run_id']}'",
        )
        assert recorded and {row["finished_at"].timestamp() for row in recorded} == {
            intervals["north"][1]
        }


def test_the_same_workspace_never_runs_twice_at_once(story: Story) -> None:
    """Two runs of one partition started together: the later finds the workspace busy, is
    retried by Dagster after a wait, and both succeed, one after the other."""
    assert len(story.twice) == 2
    assert all(run.success for run in story.twice), [run.failures for run in story.twice]
    first, second = sorted(run.interval() for run in story.twice)
    assert first[1] <= second[0], f"overlapping runs of one workspace: {first}, {second}"
    assert sum(run.retries for run in story.twice) >= 1, "the later run waited for its turn"


def test_the_models_build_after_the_syncs_over_every_workspace(story: Story) -> None:
    """Dagster's dbt assets on DuckDB are built by `test_first_build.py`, and the models over
    several workspaces on DuckDB by `tests/models/test_workspaces.py`; what this adds is their
    meeting in one Dagster run."""
    sync = build_sync_assets(workspace_partitions())
    models = build_models_assets(prepared_project())
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [sync, models],
            selection=dg.AssetSelection.assets(models),
            instance=instance,
            resources={"warehouse": DroneSyncWarehouse(**WAREHOUSE), "dbt": dbt_resource()},
            raise_on_error=False,
        )
        assert result.success, run_log(instance, result.run_id)
    built = {event.asset_key for event in result.get_asset_materialization_events()}
    assert built == set(models.keys)
    checks = result.get_asset_check_evaluations()
    assert len(checks) == len(models.check_keys) > 0
    failed = [check.asset_check_key for check in checks if not check.passed]
    assert not failed, failed
    workspaces = query(
        story.readable, "SELECT DISTINCT workspace FROM drone_ops_marts.dim_projects"
    )
    assert {row["workspace"] for row in workspaces} == set(FLEET_SEEDS)


def run_log(instance: dg.DagsterInstance, run_id: str) -> str:
    """A failed run's story as Dagster recorded it (every message at INFO or above, errors with
    their cause), so a failure on a busy CI machine says what happened without its files."""
    lines = []
    for entry in instance.all_logs(run_id):
        if entry.level < logging.INFO:
            continue
        event = entry.dagster_event
        lines.append(f"{logging.getLevelName(entry.level)} {entry.step_key or ''}: ")
        lines[-1] += (event.message if event else None) or entry.user_message
        error = event.step_failure_data.error if event and event.is_step_failure else None
        if (error := error or entry.error_info) is not None:
            lines.append(error.to_string())
    return "the model build failed; its Dagster run log:\n" + "\n".join(lines)


def test_nothing_left_the_machine(story: Story) -> None:
    """Last on purpose: every run of the story and the model build (dbt included) connected to
    loopback only (the simulators, PostgreSQL), nothing to the internet."""
    attempts = story.netguard_log.read_text(encoding="utf-8") if story.netguard_log.exists() else ""
    assert not attempts, f"connections beyond loopback were attempted:\n{attempts}"
