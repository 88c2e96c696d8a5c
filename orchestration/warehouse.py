"""Where the warehouse is, as a Dagster resource: the same `Target` the CLI builds from its
flags, so a partition loads exactly where `drone-sync run --workspace <name>` would.

Why a resource: a deployment (or a test) points the whole code location at another warehouse
in one place, and the UI shows where it loads. Credentials stay where the CLI reads them (dlt's
config or environment), never in Dagster's run config.
"""

from pathlib import Path

import dagster as dg
from pydantic import Field

from drone_ops_sync.pipelines.defaults import DEFAULT_DATASET
from drone_ops_sync.pipelines.run.target import Target


class DroneSyncWarehouse(dg.ConfigurableResource):
    """The warehouse every workspace loads into and the models are built in; the defaults are
    the CLI's (from the repository root)."""

    destination: str = Field(
        default="duckdb", description="duckdb or postgres (the tested destinations)"
    )
    database: str | None = Field(
        default=None,
        description="The DuckDB file; unset: destination.duckdb.credentials, else"
        " drone_ops_warehouse.duckdb in the working folder",
    )
    dataset: str = Field(
        default=DEFAULT_DATASET,
        description="The base dataset: raw tables of workspace <name> in <dataset>_<name>,"
        " models in <dataset>_stg and <dataset>_marts",
    )

    def base_target(self) -> Target:
        """The warehouse as `drone-sync run --destination ... --database ... --dataset ...`."""
        return Target(
            destination=self.destination,
            database=Path(self.database) if self.database else None,
            dataset=self.dataset,
        )
