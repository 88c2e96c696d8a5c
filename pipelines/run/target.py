"""Where a run loads, checked before anything is created: the destination, the DuckDB file or
server dataset, its credentials, and the dlt pipeline that loads into it."""

from __future__ import annotations

import hashlib
import os
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dlt
from dlt.common.configuration.exceptions import (
    ConfigFieldMissingException,
    ConfigurationValueError,
    LookupTraces,
)
from dlt.destinations.impl.duckdb.configuration import DuckDbCredentials

from drone_ops_sync.sources.drone_ops import (
    DEFAULT_WORKSPACE,
    ConfigError,
    missing_setting,
    redact,
    register_secret,
    require_dlt_settings,
    workspace_dataset,
)

from ..defaults import DEFAULT_DATASET
from .lock import duckdb_access, held_turn

PIPELINE_PREFIX = "drone_ops"
"""Every pipeline name starts with this (the dlt source itself is named `drone_ops` too)."""
LOCK_STEM = "drone_ops"
"""A server destination's run lock is `<pipelines folder>/drone_ops[.<dataset>].lock`."""
PIPELINE_HASH_LENGTH = 8
SYNC_FOLDER = ".drone_sync"
"""The sync's own files for a warehouse (walk spill, dbt state), beside `.dlt_pipelines`, not in
it: dlt's tooling takes every folder of a pipelines folder for a pipeline."""
# Not `drone_ops.duckdb`: DuckDB names the catalog after the file, and DuckDB 2.0 rejects
# `drone_ops.projects` as ambiguous when catalog and schema (our dataset) share a name.
DEFAULT_DATABASE = "drone_ops_warehouse.duckdb"
DEFAULT_DUCKDB_MEMORY_LIMIT = "64MB"
"""DuckDB's working memory for loads and merges; it spills to disk beyond it. At `tenth` the
deliveries' load took DuckDB to 128 MB when allowed and ran as fast in 64 (the run's peak RSS
about 355 MB instead of 405); at `large` the peak is the walk's, not a load's, and the time
stayed within the runs' spread (docs/performance.md, round three)."""
DEFAULT_DUCKDB_THREADS = 1
"""DuckDB's threads for loads and merges. One wrote 500,000 deliveries (700 MB of text) in
6.5 s and a 335 MB file where two took 11.5 s and wrote 589 MB (row groups compressed apart),
and holds one row group in memory instead of two (docs/performance.md)."""
DUCKDB_STATE_KEY = "duckdb_database"
"""dlt's local-state key for a pipeline's DuckDB file (`Pipeline._bind_local_files`)."""
LOADER_FILE_FORMATS = {"duckdb": "parquet", "postgres": "insert_values"}


@dataclass
class Target:
    """Where a run loads: destination, database file (DuckDB) and dataset.

    `dataset` is where this target's raw tables are; `models_dataset` the one the models are
    named after (`<models_dataset>_stg`, `_marts`). They are the same for the default
    workspace; a named workspace's raw tables are `<models_dataset>_<name>` (`for_workspace`)."""

    destination: str = "duckdb"
    database: Path | None = None
    dataset: str = DEFAULT_DATASET
    pipelines_dir: Path | None = None
    workspace: str = DEFAULT_WORKSPACE
    models_dataset: str | None = None

    def for_workspace(self, name: str) -> Target:
        """The same warehouse, for one workspace's raw tables and pipeline."""
        base = self.models_dataset or self.dataset
        return replace(
            self, dataset=workspace_dataset(base, name), workspace=name, models_dataset=base
        )

    def models_target(self) -> Target:
        """The target the models are built on: the fleet's base dataset."""
        return self.for_workspace(DEFAULT_WORKSPACE)

    def resolved_database(self) -> Path:
        if self.database is not None:
            return self.database
        configured: Any = dlt.config.get("destination.duckdb.credentials")
        return Path(configured if isinstance(configured, str) else DEFAULT_DATABASE)

    def resolved_pipelines_dir(self) -> Path:
        """dlt's working folder: beside the DuckDB file, one per file, so two warehouses in
        one folder never share pending packages (`.dlt_pipelines/<file name>/`)."""
        if self.pipelines_dir is not None:
            return self.pipelines_dir
        if self.destination == "duckdb":
            database = self.resolved_database().resolve()
            return database.parent / ".dlt_pipelines" / database.name
        # a server destination has no file to sit beside: dlt's data folder, one per
        # destination and dataset
        data_dir = Path(dlt.current.run_context().data_dir)
        return data_dir / "drone_ops_sync" / f"{self.destination}-{self.dataset}"

    def warehouse_identity(self) -> str:
        """What tells this warehouse apart on the machine: the DuckDB file's resolved path, or
        the server's host, port and database (never user or password) plus the dataset."""
        if self.destination == "duckdb":
            return f"duckdb:{self.resolved_database().resolve()}"
        if self.destination == "postgres":
            credentials = destination_credentials("postgres")
            where = f"{credentials.host}:{credentials.port}/{credentials.database}"
            return f"postgres:{where}/{self.dataset}"
        return f"{self.destination}:{self.dataset}"

    def pipeline_name(self) -> str:
        """dlt's pipeline name for this warehouse: `drone_ops_<dataset>_<8 hex>`, the hex a
        SHA-256 of `warehouse_identity`.

        Why per warehouse: dlt's tooling (`dlt pipeline <name> ...`, the dashboard) finds a
        pipeline by name in one folder per machine user; with one fixed name, whichever sync
        ran last anywhere on the machine decided what the tooling showed."""
        digest = hashlib.sha256(self.warehouse_identity().encode()).hexdigest()
        return f"{PIPELINE_PREFIX}_{self.dataset}_{digest[:PIPELINE_HASH_LENGTH]}"

    def working_dir(self) -> Path:
        """dlt's working folder of this warehouse's pipeline."""
        return self.resolved_pipelines_dir() / self.pipeline_name()

    def sync_dir(self) -> Path:
        """The sync's own folder for this warehouse (spill, dbt), outside dlt's pipelines
        folder: `.drone_sync/<file name>/` beside the DuckDB file, or beside the server
        dataset's pipelines folder."""
        if self.destination == "duckdb":
            database = self.resolved_database().resolve()
            return database.parent / SYNC_FOLDER / database.name
        pipelines_dir = self.resolved_pipelines_dir()
        return pipelines_dir.parent / SYNC_FOLDER / pipelines_dir.name

    def lock_path(self) -> Path:
        """The run lock: beside the DuckDB file (`<file>.lock` for the default workspace, as
        before workspaces existed, `<file>.<dataset>.lock` for a named one), or in the
        pipelines folder for a dataset on a server."""
        if self.destination == "duckdb":
            database = self.resolved_database().resolve()
            if self.workspace != DEFAULT_WORKSPACE:
                return database.with_name(f"{database.name}.{self.dataset}.lock")
            return database.with_name(database.name + ".lock")
        if self.workspace != DEFAULT_WORKSPACE:
            # an explicit pipelines folder may be shared by every workspace of a server
            return self.resolved_pipelines_dir() / f"{LOCK_STEM}.{self.dataset}.lock"
        return self.resolved_pipelines_dir() / f"{LOCK_STEM}.lock"

    def loader_file_format(self) -> str | None:
        """The file format the load uses: parquet where DuckDB reads it natively; INSERT
        statements for PostgreSQL, the one exact way in there (dlt's CSV COPY forces quoted
        empty strings to NULL, and its parquet path needs the ADBC driver and measured twice
        as slow at small scale); dlt's own choice elsewhere."""
        return LOADER_FILE_FORMATS.get(self.destination)

    def models_lock_path(self) -> Path:
        """Taken by every model build of this warehouse (`publishing.build_models_step`)."""
        return self.models_target().sync_dir() / "models.lock"

    def file_access(self) -> AbstractContextManager[None]:
        """The DuckDB file's access lock, held by every step that opens the file, so the
        workspaces sharing it take turns (`lock.py`); nothing for a server destination."""
        return duckdb_access(self.resolved_database() if self.destination == "duckdb" else None)

    def write_turn(self) -> AbstractContextManager[None]:
        """The short turn every write of this dataset takes: each load of a run, and each
        batch the event receiver writes (docs/events.md, "Applying events"). On DuckDB it is
        the file's access lock; on a server, an advisory `flock` beside the run lock
        (`<run lock>.write`), one per dataset, so a batch of events lands between two loads
        of a run, never inside one, and never after a run read what it is about to load."""
        if self.destination == "duckdb":
            return self.file_access()
        path = self.lock_path()
        return held_turn(path.with_name(path.name + ".write"), "a write")

    def spill_root(self) -> Path:
        """Where a run's walk spills: in the warehouse's sync folder, not in the system temp
        dir, so a run can remove what an earlier killed run left; one folder per workspace,
        so one workspace's run never removes another's live spill."""
        if self.workspace != DEFAULT_WORKSPACE:
            return self.sync_dir() / f"spill-{self.workspace}"
        return self.sync_dir() / "spill"


# Settings the sync's correctness depends on, applied wherever the CLI runs from. They are
# requirements, not choices, so they live here only (not in .dlt/config.toml).
def apply_runtime_defaults() -> None:
    """Settings every run needs, applied wherever the sync is started from: the source's own
    (`require_dlt_settings`). Telemetry and signal handling are set in `pipelines/__init__.py`:
    dlt reads them when first imported."""
    require_dlt_settings()


DATASET_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# dlt package each destination needs beyond the base install, for the message when it is missing
DESTINATION_EXTRAS = {
    "postgres": "dlt[postgres]",
    "bigquery": "dlt[bigquery]",
    "snowflake": "dlt[snowflake]",
    "motherduck": "dlt[motherduck]",
}


def check_target(target: Target, *, read_only: bool = False) -> None:
    """Checks destination, dataset and database path before anything is created, so a bad
    flag or setting is one line naming it (not an OS error from deep inside a mkdir).

    `read_only` for a command that only reads (`drone-sync status`): the DuckDB file need not
    be creatable, since a warehouse on a read-only mount or in another user's folder is read
    where it is, and a missing one is reported by the reader, not created."""
    if not DATASET_PATTERN.fullmatch(target.dataset):
        raise ConfigError(
            "--dataset",
            f"{target.dataset!r} is not a plain identifier (letters, digits and _, not starting"
            " with a digit, at most 63 characters)",
        )
    if target.destination == "duckdb":
        setting = "--database" if target.database is not None else "destination.duckdb.credentials"
        database = target.resolved_database()
        if database.is_dir():
            raise ConfigError(setting, f"{database} is a folder; give the path of a DuckDB file")
        if not read_only:
            check_creatable(setting, database)
            duckdb_threads()
        if database.stem == target.dataset:
            raise ConfigError(
                setting,
                f"the file {database.name} would name the DuckDB catalog {database.stem!r}, the"
                f" same as the dataset {target.dataset!r}; DuckDB cannot tell them apart in"
                " queries. Rename the file (default drone_ops_warehouse.duckdb) or change"
                " --dataset",
            )
        return
    _check_destination(target.destination)


def check_creatable(setting: str, path: Path) -> None:
    """The nearest existing folder above `path` is a writable folder, so the file can be
    created: said as one line naming the setting, not as an OS error from deep in a mkdir."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(
                    setting, f"{path} cannot be created: {parent} is a file, not a folder"
                )
            if not os.access(parent, os.W_OK):
                raise ConfigError(setting, f"{path} cannot be created: {parent} is read-only")
            return


def _check_destination(name: str) -> None:
    """A dlt destination that exists, is installed and has credentials configured."""
    from dlt.common.destination import Destination

    try:
        factory = Destination.from_reference(name)
        if factory is None:
            raise ValueError(name)
    except Exception:
        raise ConfigError(
            "--destination",
            f"{name!r} is not a dlt destination; tested here: duckdb (see docs/operations.md)",
        ) from None
    try:
        factory.client_class  # noqa: B018 (imports the destination's driver)
    except ImportError as exc:
        extra = DESTINATION_EXTRAS.get(name, f"dlt[{name}]")
        raise ConfigError(
            "--destination",
            f"{name} needs a driver that is not installed ({exc.name or exc}):"
            f" pip install '{extra}'",
        ) from None
    env = f"DESTINATION__{name.upper()}__CREDENTIALS"
    if dlt.secrets.get(f"destination.{name}.credentials") is None:
        raise missing_setting(f"destination.{name}.credentials", env, secret=True)
    try:
        destination_credentials(name)
    except ConfigFieldMissingException as exc:
        missing = _missing_fields(exc)
        raise ConfigError(
            f"destination.{name}.credentials",
            f"is missing {', '.join(missing)}: give a full connection string"
            f" (e.g. {CONNECTION_STRING_EXAMPLES.get(name, 'see dlt docs')}) in"
            f" .dlt/secrets.toml or {env}",
        ) from None
    except ConfigurationValueError as exc:
        raise ConfigError(
            f"destination.{name}.credentials", f"cannot be read: {redact(str(exc))}"
        ) from None


def destination_credentials(name: str) -> Any:
    """The destination's resolved credentials; its password is registered for redaction, so
    no error text or log line can show it."""
    from dlt.common.destination import Destination

    factory: Any = Destination.from_reference(name)
    try:
        factory.configuration(None)
    except ConfigFieldMissingException as exc:
        # the dataset name comes from the pipeline; only what the credentials lack matters,
        # and PostgreSQL logs in without a password where the server allows it
        if "credentials" in exc.traces and not _only_password_missing(name, exc):
            raise
    credentials = factory.configuration(None, accept_partial=True).credentials
    if name == "postgres" and credentials.password is None:
        # dlt insists on one; libpq does not (trust, a .pgpass file, client certificates)
        credentials.password = ""
    password = getattr(credentials, "password", None)
    if password:
        register_secret(str(password))
    return credentials


def _only_password_missing(name: str, exc: ConfigFieldMissingException) -> bool:
    return name == "postgres" and _missing_fields(exc) == ["password"]


def _missing_fields(exc: ConfigFieldMissingException) -> list[str]:
    """The innermost missing fields (e.g. `password`, not the `credentials` holding it)."""
    missing: list[str] = []
    for name, traces in exc.traces.items():
        if name != "credentials":
            continue
        nested = [
            inner for trace in traces if isinstance(trace, LookupTraces) for inner in trace.traces
        ]
        missing.extend(nested or [name])
    return sorted(set(missing))


# what a complete connection string looks like, for the message when one is incomplete
CONNECTION_STRING_EXAMPLES = {
    "postgres": "postgresql://loader:<password>@db.example.com:5432/analytics",
}


def duckdb_memory_limit() -> str:
    """DuckDB's working memory for loads and merges: it spills to disk beyond this, so the
    sync's footprint stays flat as the workspace grows (DuckDB's own default is 80% of RAM)."""
    configured: Any = dlt.config.get("destination.duckdb.memory_limit")
    return str(configured or DEFAULT_DUCKDB_MEMORY_LIMIT)


def duckdb_threads() -> int:
    """DuckDB's threads for loads and merges (`destination.duckdb.threads`, default 1)."""
    configured: Any = dlt.config.get("destination.duckdb.threads")
    try:
        threads = int(configured) if configured is not None else DEFAULT_DUCKDB_THREADS
    except (TypeError, ValueError):
        threads = 0
    if threads < 1:
        raise ConfigError(
            "destination.duckdb.threads", f"{configured!r}; expected a whole number of 1 or more"
        )
    return threads


def make_pipeline(target: Target, *, progress: Any = None) -> dlt.Pipeline:
    """A pipeline whose working directory lives beside its DuckDB file, so two warehouses
    never share local state, named for its warehouse (`Target.pipeline_name`).

    The DuckDB file's path is also kept in the pipeline's local state (`duckdb_database`, the
    key dlt itself reads when a pipeline is attached without credentials), so dlt's tooling and
    dashboard open this warehouse instead of creating `<pipeline>.duckdb` in the folder they
    were started from."""
    apply_runtime_defaults()
    pipelines_dir = target.resolved_pipelines_dir()
    if target.destination == "duckdb":
        database = target.resolved_database().resolve()
        database.parent.mkdir(parents=True, exist_ok=True)
        # the path is set as a field, not passed as the credentials' native value: dlt parses
        # a native string as a connection URL first, which imports SQLAlchemy (0.15 s of a
        # quiet run's 2 s) only to fall back to a file path
        credentials = DuckDbCredentials(
            global_config={"memory_limit": duckdb_memory_limit(), "threads": duckdb_threads()}
        )
        credentials.database = str(database)
        destination: Any = dlt.destinations.duckdb(credentials=credentials)
    elif target.destination == "postgres":
        # resolved here so a connection string without a password works (see above)
        destination = dlt.destinations.postgres(credentials=destination_credentials("postgres"))
    else:
        destination = target.destination
    pipeline = dlt.pipeline(
        pipeline_name=target.pipeline_name(),
        destination=destination,
        dataset_name=target.dataset,
        pipelines_dir=str(pipelines_dir),
        progress=progress,
    )
    if target.destination == "duckdb":
        pipeline.set_local_state_val(DUCKDB_STATE_KEY, str(target.resolved_database().resolve()))
    return pipeline
