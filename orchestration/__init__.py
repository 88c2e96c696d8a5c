"""The Dagster code location of drone-ops-sync (docs/fleet.md#dagster).

Modules, each with one job:

- `warehouse.py`    where the warehouse is (a Dagster resource around `pipelines` `Target`)
- `raw_assets.py`   the sync: one multi-asset partitioned by workspace, one asset per raw table
- `outcomes.py`     what a workspace's sync did, as materializations, failures and retries
- `manifest.py`     the dbt project and its manifest, prepared when definitions load
- `models.py`       the dbt models and tests as assets and asset checks
- `automation.py`   the schedule of the syncs and the condition the models follow
- `alerts.py`       the run-failure sensor: one line through the project's alert hook
- `definitions.py`  everything together, found by `dagster dev` through `[tool.dagster]`

It runs the same code as `drone-sync`: `pipelines.run.sync.run_sync` for a workspace, and the
model build's locks from `pipelines.publishing`. Nothing of ours imports this package but tests.

The import below comes first on purpose: `pipelines/__init__.py` turns dlt's telemetry off
before anything imports dlt (dlt reads it once, when first imported).
"""

import drone_ops_sync.pipelines  # noqa: F401
