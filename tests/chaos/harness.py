"""One warehouse of a chaos case: its files under tmp_path, runs in-process or in a child."""

from __future__ import annotations

import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import SimulatorHandle

from .child import Spec, SyncChild, Zygote
from .results import ChaosResults
from .truth import TruthReport, assert_warehouse_matches_api

DATASET = "drone_ops"
# for runs that are not under fault: small, so a defect that makes them retry shows quickly
CALM: dict[str, Any] = {"max_attempts": 4, "retry_budget_seconds": 10.0}
# under faults that must be survived (5% and 20%): enough attempts that only a defect fails
PATIENT: dict[str, Any] = {"max_attempts": 12, "retry_budget_seconds": 60.0}
# under faults that may fail a run (50%): give up fast, the next clean run heals
IMPATIENT: dict[str, Any] = {"max_attempts": 3, "retry_budget_seconds": 3.0}


@dataclass
class Warehouse:
    root: Path
    dataset: str = DATASET

    @property
    def database(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def pipelines_dir(self) -> Path:
        return self.root / "pipelines"

    def target(self) -> Target:
        return Target(
            database=self.database, dataset=self.dataset, pipelines_dir=self.pipelines_dir
        )

    def run(
        self, base_url: str, key: str, *, allow_mass_delete: bool = False, **overrides: Any
    ) -> SyncOutcome:
        settings = {"base_url": base_url, "api_key": key, **CALM, **overrides}
        return run_sync(
            self.target(), config=read_source_config(settings), allow_mass_delete=allow_mass_delete
        )

    def child(
        self,
        base_url: str,
        key: str,
        name: str = "child",
        zygote: Zygote | None = None,
        **overrides: Any,
    ) -> SyncChild:
        """Starts a sync of this warehouse in a child process (its files under root), forked
        by `zygote` when given."""
        work = self.root / "children"
        work.mkdir(parents=True, exist_ok=True)
        number = sum(1 for _ in work.glob(f"{name}*.spec.json"))
        label = f"{name}{number}"
        spec = Spec(
            database=self.database,
            pipelines_dir=self.pipelines_dir,
            overrides={"base_url": base_url, "api_key": key, **CALM, **overrides},
            out=work / f"{label}.out.json",
            dataset=self.dataset,
        )
        return SyncChild(work, spec, name=label, zygote=zygote)

    def check(
        self,
        base_url: str,
        key: str,
        *,
        results: ChaosResults | None = None,
        kind: str | None = None,
        run_ok: bool | None = None,
        note: str = "",
    ) -> TruthReport:
        return assert_warehouse_matches_api(
            self.database,
            self.dataset,
            base_url,
            key,
            pipelines_dir=self.pipelines_dir,
            overrides=CALM,
            results=results,
            kind=kind,
            run_ok=run_ok,
            note=note,
        )

    def copy_to(self, root: Path) -> Warehouse:
        """A copy of this warehouse (database and pipeline folder) under `root`."""
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.database, root / self.database.name)
        shutil.copytree(self.pipelines_dir, root / self.pipelines_dir.name)
        return Warehouse(root, self.dataset)


def failed_tables(outcome: SyncOutcome) -> dict[str, str | None]:
    return {
        name: result.error
        for name, result in outcome.report.tables.items()
        if result.status not in ("success", "skipped")
    }


RATES = (0.05, 0.20, 0.50)


def fault_phases(
    kind: str,
    sim: SimulatorHandle,
    warehouse: Warehouse,
    results: ChaosResults,
    *,
    switch: Callable[[float | None], None],
    sync_url: str | None = None,
    rates: tuple[float, ...] = RATES,
    **overrides: Any,
) -> None:
    """Syncs `warehouse` under a fault at each rate in turn (`switch(rate)` turns it on,
    `switch(None)` off), with churn between; the first phase is a first load, the later ones
    incremental. Below 50% the run must succeed; at 50% it may fail and the next clean run
    must heal. Every phase ends with the truth check."""
    for number, rate in enumerate(rates):
        if number:
            sim.churn(
                seed=zlib.crc32(f"{kind}:{number}".encode()),
                update_fraction=0.05,
                delete_fraction=0.01,
                new_deliveries_per_webhook=3,
            )
        settings = {**(PATIENT if rate < 0.5 else IMPATIENT), **overrides}
        switch(rate)
        try:
            outcome = warehouse.run(sync_url or sim.base_url, sim.read_key, **settings)
        finally:
            switch(None)
        label = f"{kind}@{rate:.0%}"
        retries = sum(result.retries for result in outcome.report.tables.values())
        if rate < 0.5 and not outcome.ok:
            results.add(label, survived=False, run_ok=False, note=str(failed_tables(outcome)))
            raise AssertionError(
                f"{label}: the run failed: {failed_tables(outcome)} {outcome.load_error}"
            )
        if not outcome.ok:
            healed = warehouse.run(sim.base_url, sim.read_key)
            assert healed.ok, f"{label}: the clean run after it failed: {failed_tables(healed)}"
        warehouse.check(
            sim.base_url,
            sim.read_key,
            results=results,
            kind=label,
            run_ok=outcome.ok,
            note=f"retries={retries}",
        )
