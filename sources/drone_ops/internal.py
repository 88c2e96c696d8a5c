"""For drone-sync's own pipelines (`pipelines/`, `orchestration/`, `bench/`); no compatibility
promise: names here move or go whenever drone-sync's own code no longer needs them. The
source's public face, for a plain dlt pipeline, is `drone_ops_sync.sources.drone_ops`.
"""

from . import file_lock, settings
from .check import AccessReport, check_access
from .config import checked_tables, is_loopback_host, missing_setting
from .events import (
    EVENTS_TABLE,
    UNROUTED,
    ReceivedEvent,
    event_rows,
    newest_versions,
    project_versions,
)
from .http import DroneOpsClient, Urllib3Transport
from .known import held_versions
from .run import RunOptions, Seams, SyncRun, new_run_id
from .run_state import (
    FAILED_STATUSES,
    Attempt,
    RunRecord,
    RunStateReader,
    connection_reader,
    marks_resource,
    record_tables,
)
from .secrets import redact, register_secret
from .settings_files import check_settings_files
from .source import delivery_wave, finish_quiet_tables, require_dlt_settings
from .tables.entities import ENTITIES, ENTITY_TABLES, LISTS, LOAD_GROUPS, WEBHOOKS
from .walk import ProgressCallback
from .walk.spill import SPILL_PREFIX
from .workspaces import DEFAULT_WORKSPACE, configured_names, selected_names, workspace_dataset

__all__ = [
    "DEFAULT_WORKSPACE",
    "ENTITIES",
    "ENTITY_TABLES",
    "EVENTS_TABLE",
    "FAILED_STATUSES",
    "LISTS",
    "LOAD_GROUPS",
    "SPILL_PREFIX",
    "UNROUTED",
    "WEBHOOKS",
    "AccessReport",
    "Attempt",
    "DroneOpsClient",
    "ProgressCallback",
    "ReceivedEvent",
    "RunOptions",
    "RunRecord",
    "RunStateReader",
    "Seams",
    "SyncRun",
    "Urllib3Transport",
    "check_access",
    "check_settings_files",
    "checked_tables",
    "configured_names",
    "connection_reader",
    "delivery_wave",
    "event_rows",
    "file_lock",
    "finish_quiet_tables",
    "held_versions",
    "is_loopback_host",
    "marks_resource",
    "missing_setting",
    "new_run_id",
    "newest_versions",
    "project_versions",
    "record_tables",
    "redact",
    "register_secret",
    "require_dlt_settings",
    "selected_names",
    "settings",
    "workspace_dataset",
]
