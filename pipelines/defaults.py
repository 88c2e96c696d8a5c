"""The defaults the CLI shows in its help, kept in a module that imports nothing.

`drone-sync run --help` (and a scheduler's dry check of its flags) should not pay for dlt,
DuckDB, pyarrow or rich; the modules that use these values import them from here, so each
value is still defined once.
"""

from __future__ import annotations

DEFAULT_DATASET = "drone_ops"
DEFAULT_HEARTBEAT_SECONDS = 30.0
"""How often `--log-format json` says a run is alive (`heartbeat` events)."""
DEFAULT_MAX_AGE = "45m"
"""Three missed runs of the README's every-15-minutes schedule."""
SNAPSHOT_CONFIG_KEY = "destination.duckdb.bi_snapshot"
"""Where the snapshot goes (a path), or false to publish none; default beside the warehouse."""
SNAPSHOT_RUNS_CONFIG_KEY = "destination.duckdb.bi_snapshot_sync_runs"
"""Whether the snapshot carries `<dataset>._sync_runs` (default true), for freshness tiles."""
DUCKDB_MEMORY_LIMIT_KEY = "destination.duckdb.memory_limit"
DUCKDB_THREADS_KEY = "destination.duckdb.threads"
METRICS_FILE_KEY = "runtime.metrics_file"
WEBHOOK_SECRET_KEY = "sources.drone_ops.webhook_secret"
OWN_SETTINGS = (
    SNAPSHOT_CONFIG_KEY,
    SNAPSHOT_RUNS_CONFIG_KEY,
    DUCKDB_MEMORY_LIMIT_KEY,
    DUCKDB_THREADS_KEY,
    METRICS_FILE_KEY,
    WEBHOOK_SECRET_KEY,
)
"""The settings drone-sync reads beyond the source's and dlt's own, in sections whose other
names come from them: known to the check of unknown settings (`settings_files.py`)."""
STRICT_SETTINGS_ENV = "DRONE_SYNC_STRICT_SETTINGS"
"""`--strict-settings` for every command of a deploy or a CI job (1, true or yes)."""
MODEL_DESTINATIONS = ("duckdb", "postgres")
"""Destinations the dbt project is built and tested on (models/profiles.yml has their outputs)."""
DEFAULT_LISTEN_HOST = "127.0.0.1"
"""`drone-sync listen` answers on loopback unless told otherwise (a proxy in front, or --host)."""
DEFAULT_LISTEN_PORT = 8787
DEFAULT_FLEET_PARALLEL = 4
"""Workspaces synced at once by one `drone-sync run` (docs/fleet.md, the sizing table)."""
DEFAULT_APPLY_SECONDS = 1.0
"""How often `drone-sync listen` applies what it received (docs/events.md, "Applying events")."""
DEFAULT_FOLLOW_MARTS_SECONDS = 15.0
"""Seconds between two partial model builds of `drone-sync listen` following applied events."""
