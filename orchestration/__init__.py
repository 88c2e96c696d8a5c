"""The Dagster code location of drone-ops-sync (docs/fleet.md#dagster; its modules are drawn in
docs/architecture.md). It runs the same code as `drone-sync`; nothing of ours imports it but
tests.

The import below comes first on purpose: `pipelines/__init__.py` turns dlt's telemetry off
before anything imports dlt (dlt reads it once, when first imported).
"""

import drone_ops_sync.pipelines  # noqa: F401
