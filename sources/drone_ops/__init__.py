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
from .known import DeliveryMark, KnownState, held_versions, held_versions_in, read_known_state
from .report import SyncReport, TableResult
from .run import RunOptions, Seams, SyncRun, new_run_id
from .run_state import (
    FAILED_STATUSES,
    RUN_STATE_TABLES,
    Attempt,
    RunMoment,
    RunRecord,
    RunStateReader,
    connection_reader,
    marks_resource,
    pipeline_reader,
    record_tables,
)
from .secrets import redact, register_secret
from .settings_files import check_settings_files
from .source import (
    RECORD_RESOURCES,
    applied_events,
    delivery_wave,
    drone_ops,
    empty_events_table,
    finish_quiet_tables,
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
from .walk import ProgressCallback, WorkspaceWalk
from .walk.spill import SPILL_PREFIX
from .workspaces import (
    DEFAULT_WORKSPACE,
    Workspace,
    configured_names,
    read_source_config,
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
    "FAILED_STATUSES",
    "LISTS",
    "LOAD_GROUPS",
    "RECORD_RESOURCES",
    "RUN_STATE_TABLES",
    "SPILL_PREFIX",
    "UNROUTED",
    "WEBHOOKS",
    "AccessReport",
    "ApiError",
    "Attempt",
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
    "RunMoment",
    "RunOptions",
    "RunRecord",
    "RunStateReader",
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
    "connection_reader",
    "delivery_wave",
    "drone_ops",
    "empty_events_table",
    "event_rows",
    "finish_quiet_tables",
    "held_versions",
    "held_versions_in",
    "is_loopback_host",
    "marks_resource",
    "missing_setting",
    "new_run_id",
    "newest_versions",
    "pipeline_reader",
    "project_versions",
    "read_known_state",
    "read_source_config",
    "read_workspace_config",
    "read_workspaces",
    "record_tables",
    "redact",
    "register_secret",
    "require_dlt_settings",
    "selected_names",
    "setting_name",
    "settings",
    "validate_base_url",
    "workspace_dataset",
]
