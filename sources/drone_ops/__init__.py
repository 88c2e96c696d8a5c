"""dlt source for the Drone Operations Service API.

    import dlt
    from drone_ops_sync.sources.drone_ops import drone_ops

    pipeline = dlt.pipeline("drone_ops", destination="duckdb", dataset_name="drone_ops")
    pipeline.run(drone_ops())

Wings, each with one job (docs/architecture.md has the whole picture): `http/` talks to the API;
`tables/` says what each table is and how a record becomes its row; `walk/` walks the workspace
into spilled Arrow batches; `compare/` decides what each table loads (`compare/deletions.py`:
what may be retired); `known.py` reads what the warehouse holds; `run_state.py` owns the
run-state tables (`_sync_runs`, `_sync_issues`, `_sync_delivery_marks`); `run.py` is one run;
`source.py` the dlt source.

This module is the source's public face, for anyone running it in their own dlt pipeline
(docs/plain-source.md): the source, its settings reader, the report of a run, the table
names and the error tree. drone-sync's own pipelines import what else they need from
`internal.py`, which makes no compatibility promise; callers outside this package import from
one of the two only.
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
