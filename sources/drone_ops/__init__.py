"""dlt source for the Drone Operations Service API (docs/plain-source.md).

    import dlt
    from drone_ops_sync.sources.drone_ops import drone_ops

    pipeline = dlt.pipeline("drone_ops", destination="duckdb", dataset_name="drone_ops")
    pipeline.run(drone_ops())

This module is the source's public face, for anyone running it in their own dlt pipeline.
drone-sync's own pipelines import what else they need from `internal.py`, which makes no
compatibility promise; callers outside this package import from one of the two only. The
wings, each with one job, are drawn in docs/architecture.md.
"""

from .config import SourceConfig
from .exceptions import (
    ApiError,
    AuthError,
    ConfigError,
    DroneOpsError,
    Interrupted,
    MassDeleteRefused,
    NotFoundError,
    PaginationError,
    ResponseError,
    RetriesExhaustedError,
    UnreachableError,
)
from .report import SyncReport, TableResult
from .source import RECORD_RESOURCES, drone_ops
from .tables.entities import ALL_TABLES
from .workspaces import read_source_config, read_workspace_config

__all__ = [
    "ALL_TABLES",
    "RECORD_RESOURCES",
    "ApiError",
    "AuthError",
    "ConfigError",
    "DroneOpsError",
    "Interrupted",
    "MassDeleteRefused",
    "NotFoundError",
    "PaginationError",
    "ResponseError",
    "RetriesExhaustedError",
    "SourceConfig",
    "SyncReport",
    "TableResult",
    "UnreachableError",
    "drone_ops",
    "read_source_config",
    "read_workspace_config",
]
