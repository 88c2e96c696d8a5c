"""dlt source for the Drone Operations Service API.

    import dlt
    from drone_ops_sync.sources.drone_ops import drone_ops

    pipeline = dlt.pipeline("drone_ops", destination="duckdb", dataset_name="drone_ops")
    pipeline.run(drone_ops())

Wings, each with one job (docs/architecture.md has the whole picture): `http/` talks to the API;
`tables/` says what each table is and how a record becomes its row; `walk/` walks the workspace
into spilled Arrow batches; `compare/` decides what each table loads (`compare/deletions.py`:
what may be retired); `known.py` reads what the warehouse holds; `run.py` is one run;
`source.py` the dlt source. Callers outside this package import from here only.
"""

from . import settings
from .check import AccessReport, check_access
from .config import (
    SourceConfig,
    checked_api_key,
    checked_tables,
    is_loopback_host,
    missing_setting,
    read_source_config,
    setting_name,
    validate_base_url,
)
from .events import (
    EVENTS_SCHEMA,
    EVENTS_TABLE,
    UNROUTED,
    ReceivedEvent,
    event_rows,
    newest_versions,
    project_versions,
)
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
from .http import DroneOpsClient, Urllib3Transport
from .known import DeliveryMark, KnownState, read_known_state
from .report import SyncReport, TableResult
from .run import RunOptions, Seams, SyncRun, new_run_id
from .secrets import redact, register_secret
from .settings_files import check_settings_files
from .source import (
    applied_events,
    delivery_wave,
    drone_ops,
    empty_events_table,
    require_dlt_settings,
)
from .tables.entities import (
    ALL_TABLES,
    ENTITIES,
    ENTITY_TABLES,
    LISTS,
    LOAD_GROUPS,
    WEBHOOKS,
    Entity,
)
from .tables.rows import issue_table
from .tables.schema import ISSUES
from .walk import ProgressCallback, WorkspaceWalk
from .walk.spill import SPILL_PREFIX
from .workspaces import (
    DEFAULT_WORKSPACE,
    Workspace,
    configured_names,
    read_workspace_config,
    read_workspaces,
    selected_names,
    workspace_dataset,
)

__all__ = [
    "ALL_TABLES",
    "DEFAULT_WORKSPACE",
    "ENTITIES",
    "ENTITY_TABLES",
    "EVENTS_SCHEMA",
    "EVENTS_TABLE",
    "ISSUES",
    "LISTS",
    "LOAD_GROUPS",
    "SPILL_PREFIX",
    "UNROUTED",
    "WEBHOOKS",
    "AccessReport",
    "ApiError",
    "AuthError",
    "ConfigError",
    "DeliveryMark",
    "DroneOpsClient",
    "DroneOpsError",
    "Entity",
    "KnownState",
    "MassDeleteRefused",
    "NotFoundError",
    "PaginationError",
    "ProgressCallback",
    "ReceivedEvent",
    "RetriesExhaustedError",
    "RunOptions",
    "Seams",
    "SourceConfig",
    "SyncReport",
    "SyncRun",
    "TableResult",
    "Urllib3Transport",
    "Workspace",
    "WorkspaceWalk",
    "applied_events",
    "check_access",
    "check_settings_files",
    "checked_api_key",
    "checked_tables",
    "configured_names",
    "delivery_wave",
    "drone_ops",
    "empty_events_table",
    "event_rows",
    "is_loopback_host",
    "issue_table",
    "missing_setting",
    "new_run_id",
    "newest_versions",
    "project_versions",
    "read_known_state",
    "read_source_config",
    "read_workspace_config",
    "read_workspaces",
    "redact",
    "register_secret",
    "require_dlt_settings",
    "selected_names",
    "setting_name",
    "settings",
    "validate_base_url",
    "workspace_dataset",
]
