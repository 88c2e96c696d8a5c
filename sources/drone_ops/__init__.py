"""dlt source for the Drone Operations Service API."""

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
from .resources import KnownState, RunOptions, drone_ops
from .walk import DeliveryMark

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
    "SyncReport",
    "TableResult",
    "drone_ops",
]
