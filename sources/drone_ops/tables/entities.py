"""The entity registry: one record per warehouse table, and everything the sync knows of it.

Who reads which field, and what adding a field or a table takes: docs/architecture.md ("One
table's knowledge, in one place"); docs/warehouse.md is the human-readable version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import settings
from .rows import RowBuilder, creator_flattened_row, entity_row, job_row
from .schema import Contract, columns

LISTS, WEBHOOKS = "lists", "webhooks"
"""The walk's two stages: the lists, then the (long, sequential) delivery-log chains. Tables of
the first stage load while the second is still walking."""


@dataclass(frozen=True)
class Entity:
    """One warehouse table: its contract, where the API shows its records, how it loads."""

    contract: Contract
    stages: tuple[str, ...]
    """The walk stages that must finish before the table can be compared and loaded."""
    list_path: str | None = None
    """The list endpoint (a template with `{project_id}` / `{webhook_id}` under a parent)."""
    items_key: str | None = None
    """The key of the page's record list."""
    list_variants: tuple[Mapping[str, str], ...] = ({},)
    """Query parameters of each walk of the list (projects: active, then archived)."""
    parent: str | None = None
    """The table whose records this table is listed under (jobs under projects)."""
    parent_column: str | None = None
    """The column that holds the parent's id, read back for single-record paths."""
    record_path: str | None = None
    """The single-record endpoint (`{id}`), asked before a deletion is believed; None: rows
    are never retired one by one (one per id, merged)."""
    record_replaces_row: bool = True
    """Whether the single-record shape can stand in for a list row. Team members' cannot
    (it lacks `status`): a member that still exists keeps its current version."""
    row: RowBuilder | None = None
    """Record (and its version and parent id) to row; None for tables built otherwise."""
    made_from: tuple[str, ...] = ()
    """Tables whose records this table is derived from, rather than listed by the API."""
    key: tuple[str, ...] = ("id",)

    @property
    def table(self) -> str:
        return self.contract.table

    @property
    def history(self) -> bool:
        """scd2 (a version per change, deletions retire); otherwise one row per id."""
        return self.contract.history

    @property
    def current_columns(self) -> tuple[str, ...]:
        """What the warehouse reader reads of the current rows for change detection."""
        parent = (self.parent_column,) if self.parent_column else ()
        return (*self.key, settings.ROW_HASH_COLUMN, *parent)


PROJECTS = Entity(
    Contract(
        "projects",
        columns(
            "id:str name:str description:str status:str other_status_reason:str"
            " start_date:date end_date:date created:ts updated:ts archived:bool external_id:str"
            " laanc_number:str created_by_id:str"
        ),
        history=True,
        flattened=frozenset({"created_by"}),
        required=("name", "status", "created", "updated"),
        enums={"status": settings.STATUSES},
        lengths={
            "name": (1, 100),
            "description": (1, 1000),
            "external_id": (0, 255),
            "laanc_number": (0, 100),
            "other_status_reason": (1, 200),
        },
    ),
    stages=(LISTS,),
    list_path="/v1/projects",
    items_key="projects",
    # the list shows active projects only unless asked for the archived ones
    list_variants=({}, {"archived": "true"}),
    record_path="/v1/projects/{id}",
    row=creator_flattened_row,
)

JOBS = Entity(
    Contract(
        "jobs",
        columns(
            "id:str project_id:str name:str description:str type:str status:str"
            " other_status_reason:str priority:str job_pattern:str start_date:date"
            " end_date:date latitude:float longitude:float inspection_notes:str"
            " capture_types:json[str] external_id:str created:ts updated:ts recurring_frequency:str"
            " recurring_interval:int selected_days_of_week:json[int] week_of_month:int"
            " weeks_of_month:json[int] flights_per_occurrence:int"
        ),
        history=True,
        required=("name", "status", "type", "start_date", "created", "updated"),
        enums={
            "status": settings.STATUSES,
            "priority": settings.PRIORITIES,
            "job_pattern": settings.JOB_PATTERNS,
            "recurring_frequency": settings.RECURRING_FREQUENCIES,
        },
        lengths={
            "name": (1, 100),
            "description": (0, 1000),
            "inspection_notes": (0, 2000),
            "external_id": (0, 255),
            "other_status_reason": (1, 200),
        },
        ranges={
            "latitude": (-90.0, 90.0),
            "longitude": (-180.0, 180.0),
            "recurring_interval": (1, 365),
            "flights_per_occurrence": (1, 10),
        },
    ),
    stages=(LISTS,),
    # the default of sources.drone_ops.jobs_path, which replaces it when set
    list_path=settings.JOBS_PATH_TEMPLATE,
    items_key="jobs",
    parent="projects",
    parent_column="project_id",
    record_path="{list_path}/{id}",
    row=job_row,
)

JOB_TYPES = Entity(
    Contract(
        "job_types",
        columns("id:str name:str icon:str is_predefined:bool"),
        history=True,
        required=("name",),
        lengths={"name": (1, 50), "icon": (0, 20)},
    ),
    stages=(LISTS,),
    list_path="/v1/job-types",
    items_key="job_types",
    record_path="/v1/job-types/{id}",
    row=entity_row,
)

TEAM_MEMBERS = Entity(
    Contract(
        "team_members",
        columns(
            "id:str email:str first_name:str last_name:str role:str status:str title:str"
            " phone_number:str profile_picture:str created:ts updated:ts"
        ),
        history=True,
        required=("email", "role"),
        enums={"role": settings.ROLES},
    ),
    stages=(LISTS,),
    list_path="/v1/team",
    items_key="team",
    record_path="/v1/team/{id}",
    record_replaces_row=False,
    row=entity_row,
)

WEBHOOKS_TABLE = Entity(
    Contract(
        "webhooks",
        columns(
            "id:str name:str url:str event_types:json[str] status:str failure_count:int created:ts"
            " updated:ts last_triggered_at:ts created_by_id:str"
        ),
        history=True,
        flattened=frozenset({"created_by"}),
        required=("name", "url", "created"),
    ),
    stages=(WEBHOOKS,),
    # the list gives the ids; each webhook's row is the `webhook` object of its own page
    list_path="/v1/webhooks",
    items_key="webhooks",
    row=creator_flattened_row,
)

WEBHOOK_DELIVERIES = Entity(
    Contract(
        "webhook_deliveries",
        columns(
            "id:str webhook_id:str event_type:str url:str status:str response_status:int"
            " response_body:str request_payload:str duration_ms:int error_message:str"
            " created:ts delivery_id:str event:str event_timestamp:ts workspace_id:str"
            " data:json"
        ),
        required=("created",),
    ),
    stages=(WEBHOOKS,),
    # newest first, walked until the entries the warehouse already holds (payloads.py types
    # them in batches)
    list_path="/v1/webhooks/{webhook_id}",
    items_key="logs",
    parent="webhooks",
    parent_column="webhook_id",
)

USERS = Entity(
    Contract(
        "users",
        columns(
            "id:str kind:str email:str first_name:str last_name:str profile_picture:str"
            " display_name:str first_seen_at:ts last_seen_at:ts _row_hash:str"
        ),
    ),
    # no endpoint: the `created_by` objects of projects and webhooks (transforms.user_row)
    stages=(LISTS, WEBHOOKS),
    made_from=("projects", "webhooks"),
)

ENTITIES: dict[str, Entity] = {
    entity.table: entity
    for entity in (
        PROJECTS,
        JOBS,
        JOB_TYPES,
        TEAM_MEMBERS,
        WEBHOOKS_TABLE,
        WEBHOOK_DELIVERIES,
        USERS,
    )
}
ALL_TABLES: tuple[str, ...] = tuple(ENTITIES)
ENTITY_TABLES: tuple[str, ...] = tuple(name for name, e in ENTITIES.items() if e.history)
"""Tables that keep history (scd2); the others hold one row per id."""
LOAD_GROUPS: tuple[tuple[str, ...], ...] = (
    tuple(name for name, e in ENTITIES.items() if e.stages == (LISTS,)),
    tuple(name for name, e in ENTITIES.items() if e.stages != (LISTS,)),
)
"""Loaded one group after the other: the lists finish long before the delivery-log chains,
so the first group loads while the chains are still walking."""
TABLE_COLUMNS = {name: e.contract.columns for name, e in ENTITIES.items()}
