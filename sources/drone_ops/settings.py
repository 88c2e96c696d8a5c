"""Constants of the Drone Operations API and of how we sync it. No logic, no I/O."""

from __future__ import annotations

from typing import Final

SOURCE_NAME: Final = "drone_ops"
CONFIG_SECTION: Final = "sources.drone_ops"
KEY_SETTING: Final = f"{CONFIG_SECTION}.api_key (env SOURCES__DRONE_OPS__API_KEY)"
"""The key's setting as a refused key's message names it (a named workspace names its own)."""
URL_SETTING: Final = f"{CONFIG_SECTION}.base_url"
"""The address's setting as an unreachable API's message names it (a named workspace's own)."""

API_PREFIX: Final = "/v1"
# The default of `sources.drone_ops.jobs_path`; every other endpoint is in its table's record
# in entities.py.
JOBS_PATH_TEMPLATE: Final = "/v1/projects/{project_id}/jobs"

RUNS_TABLE: Final = "_sync_runs"
ISSUES_TABLE: Final = "_sync_issues"

ROW_HASH_COLUMN: Final = "_row_hash"
TOMBSTONE_COLUMN: Final = "_sync_tombstone"

DEFAULT_MAX_WORKERS: Final = 16
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
DEFAULT_MAX_ATTEMPTS: Final = 8
DEFAULT_RETRY_BUDGET_SECONDS: Final = 300.0
DEFAULT_MAX_RETRY_AFTER_SECONDS: Final = 60.0
DEFAULT_BACKOFF_INITIAL_SECONDS: Final = 0.5
DEFAULT_BACKOFF_MAX_SECONDS: Final = 30.0
DEFAULT_MAX_RETIRE_SHARE: Final = 0.5
# Deliveries newer than (newest loaded - overlap) are fetched again and deduplicated by id, so
# log entries written out of order close to a run's start are not missed.
DEFAULT_DELIVERY_OVERLAP_SECONDS: Final = 60
# 1 walks every project's jobs every run (exact). N > 1: a rolling refresh walks the jobs of new
# and changed projects plus one N-th of the others, so each project's jobs are walked at least
# every N runs.
DEFAULT_JOB_REFRESH_SLICES: Final = 1
MAX_JOB_REFRESH_SLICES: Final = 1_000
# Hard ceilings that keep every request loop bounded.
MAX_PAGES_PER_WALK: Final = 100_000
# Pages in a row with no rows but a new cursor that end a walk as a loop: the API hands out a
# cursor only when another matching row exists, so even concurrent deletes rarely empty one page
# (docs/api-assumptions.md), and a server doing it forever would otherwise run to the page cap.
MAX_EMPTY_PAGES_IN_A_ROW: Final = 3
ARROW_BATCH_ROWS: Final = 5_000
# Typed delivery-log entries that make the pipeline load a wave of them while the chains are
# still walking, so little is left to load when the last chain ends.
DELIVERY_WAVE_ROWS: Final = 50_000
DELIVERY_MARKS_TABLE: Final = "_sync_delivery_marks"

USER_AGENT: Final = "drone-ops-sync/0.1"
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})

STATUSES: Final = (
    "draft",
    "not_started",
    "planned",
    "in_progress",
    "completed",
    "on_hold",
    "weather_delayed",
    "technical_issues",
    "cancelled",
    "aborted",
    "other",
)
PRIORITIES: Final = ("low", "medium", "high")
JOB_PATTERNS: Final = ("one_time", "recurring")
RECURRING_FREQUENCIES: Final = ("daily", "weekly", "monthly", "yearly", "flexible")
ROLES: Final = ("root", "project_manager", "ops_lead", "pilot", "client")
# Failures a wait rarely fixes (connection refused, unknown host, TLS, a body that is not JSON)
# are retried this often within this many seconds, not for the whole retry budget.
SHORT_RETRY_ATTEMPTS: Final = 3
SHORT_RETRY_SECONDS: Final = 10.0

# dlt settings the sync's correctness depends on, applied by the source itself (`source.py`,
# `require_dlt_settings`) so that any pipeline running it gets them.
REQUIRED_DLT_SETTINGS: Final = {
    # scd2 on Arrow rows needs a row key; the row version is our deterministic _row_hash
    "NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_ID": "true",
    # every row says which load wrote it (lineage for BI users and our tests)
    "NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_LOAD_ID": "true",
    # resources run one after the other; they share one walk
    "EXTRACT__NEXT_ITEM_MODE": "fifo",
}

API_KEY_PLACEHOLDER: Final = "<your read-only API key>"
"""The key's value in `.dlt/secrets.toml.example` (and in a starter secrets file): a secrets
file copied and not edited still holds it, which `config.checked_api_key` recognises and says
so, instead of refusing the spaces inside it."""
