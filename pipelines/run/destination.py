"""A target's destination: its settings checked before anything is created (`check_target`),
DuckDB's working memory and threads, and the dlt pipeline that loads into it (`make_pipeline`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import dlt
from dlt.common.configuration.exceptions import (
    ConfigFieldMissingException,
    ConfigurationValueError,
)
from dlt.destinations.impl.duckdb.configuration import DuckDbCredentials

from drone_ops_sync.sources.drone_ops import ConfigError
from drone_ops_sync.sources.drone_ops.internal import missing_setting, redact, require_dlt_settings

from ..defaults import DUCKDB_MEMORY_LIMIT_KEY, DUCKDB_THREADS_KEY
from .credentials import CONNECTION_STRING_EXAMPLES, destination_credentials, missing_fields
from .target import Target

DEFAULT_DUCKDB_MEMORY_LIMIT = "64MB"
"""DuckDB's working memory for loads and merges unless `destination.duckdb.memory_limit` says:
it spills to disk beyond it, so the sync's footprint stays flat as the workspace grows (DuckDB's
own default is 80% of RAM), and the loads run as fast as with more (docs/performance.md)."""
DEFAULT_DUCKDB_THREADS = 1
"""DuckDB's threads for loads and merges: one writes faster, a smaller file and holds fewer row
groups in memory than two (docs/performance.md)."""
DUCKDB_STATE_KEY = "duckdb_database"
"""dlt's local-state key for a pipeline's DuckDB file (`Pipeline._bind_local_files`)."""


DATASET_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


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


def check_creatable(setting: str, path: Path, *, hint: str = "") -> None:
    """The nearest existing folder above `path` is a writable folder, so the file can be
    created or replaced (and DuckDB can write its .wal and lock files beside it): said as one
    line naming the setting, not as an OS error from deep in a mkdir. `hint` ends the line."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(
                    setting, f"{path} cannot be created: {parent} is a file, not a folder{hint}"
                )
            if not os.access(parent, os.W_OK):
                done = "written" if path.exists() else "created"
                raise ConfigError(setting, f"{path} cannot be {done}: {parent} is read-only{hint}")
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
        # dlt names the extra that installs a destination's driver after the destination
        raise ConfigError(
            "--destination",
            f"{name} needs a driver that is not installed ({exc.name or exc}):"
            f" pip install 'dlt[{name}]'",
        ) from None
    env = f"DESTINATION__{name.upper()}__CREDENTIALS"
    if dlt.secrets.get(f"destination.{name}.credentials") is None:
        raise missing_setting(f"destination.{name}.credentials", env, secret=True)
    try:
        destination_credentials(name)
    except ConfigFieldMissingException as exc:
        missing = missing_fields(exc)
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


def duckdb_threads() -> int:
    """DuckDB's threads for loads and merges (`destination.duckdb.threads`, default 1)."""
    configured: Any = dlt.config.get(DUCKDB_THREADS_KEY)
    try:
        threads = int(configured) if configured is not None else DEFAULT_DUCKDB_THREADS
    except (TypeError, ValueError):
        threads = 0
    if threads < 1:
        raise ConfigError(
            DUCKDB_THREADS_KEY, f"{configured!r}; expected a whole number of 1 or more"
        )
    return threads


def make_pipeline(target: Target) -> dlt.Pipeline:
    """A pipeline whose working directory lives beside its DuckDB file, so two warehouses
    never share local state, named for its warehouse (`Target.pipeline_name`).

    The DuckDB file's path is also kept in the pipeline's local state (`duckdb_database`, the
    key dlt itself reads when a pipeline is attached without credentials), so dlt's tooling and
    dashboard open this warehouse instead of creating `<pipeline>.duckdb` in the folder they
    were started from."""
    require_dlt_settings()
    pipelines_dir = target.resolved_pipelines_dir()
    if target.destination == "duckdb":
        database = target.resolved_database().resolve()
        database.parent.mkdir(parents=True, exist_ok=True)
        # the path is set as a field, not passed as the credentials' native value: dlt parses
        # a native string as a connection URL first, which imports SQLAlchemy only to fall back
        memory_limit = str(dlt.config.get(DUCKDB_MEMORY_LIMIT_KEY) or DEFAULT_DUCKDB_MEMORY_LIMIT)
        credentials = DuckDbCredentials(
            global_config={"memory_limit": memory_limit, "threads": duckdb_threads()}
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
    )
    if target.destination == "duckdb":
        pipeline.set_local_state_val(DUCKDB_STATE_KEY, str(target.resolved_database().resolve()))
    return pipeline
