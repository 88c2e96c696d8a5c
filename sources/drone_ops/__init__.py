"""dlt source for the Drone Operations Service API.

Where things live (docs/architecture.md has the whole picture):
`entities.py` what each table is; `client.py` HTTP; `walk.py` / `webhook_walk.py` the walk;
`spill.py` the walk's store; `table_sync.py` what each table loads; `resources.py` the source.
"""

from .config import SourceConfig, read_source_config
from .exceptions import (
    ApiError,
    AuthError,
    ConfigError,
    DroneOpsError,
    MassDeleteRefused,
    NotFoundError,
    PaginationError,
    RetriesExhaustedError,
)
from .report import SyncReport, TableResult
from .resources import drone_ops
from .run import DeliveryMark, KnownState, RunOptions
from .walk import WorkspaceWalk, open_walk

__all__ = [
    "ApiError",
    "AuthError",
    "ConfigError",
    "DeliveryMark",
    "DroneOpsError",
    "KnownState",
    "MassDeleteRefused",
    "NotFoundError",
    "PaginationError",
    "RetriesExhaustedError",
    "RunOptions",
    "SourceConfig",
    "SyncReport",
    "TableResult",
    "WorkspaceWalk",
    "drone_ops",
    "open_walk",
    "read_source_config",
]
