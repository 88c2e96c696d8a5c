"""Where a run loads: the destination, the DuckDB file or server dataset, and every path and
name derived from them (dlt's working folder, the sync's folder, the locks, the pipeline name).

Checking a target before anything is created, and the dlt pipeline that loads into it, are
`destination.py`'s; a destination's credentials are `credentials.py`'s."""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dlt

from drone_ops_sync.sources.drone_ops.internal import DEFAULT_WORKSPACE, workspace_dataset

from ..defaults import DEFAULT_DATASET
from . import lock
from .credentials import destination_credentials

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
LOADER_FILE_FORMATS = {"duckdb": "parquet", "postgres": "insert_values"}


@dataclass
class Target:
    """Where a run loads: destination, database file (DuckDB) and dataset (the raw tables'),
    and `models_dataset`, the one the models are named after (`for_workspace`)."""

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
        """dlt's pipeline name for this warehouse: `drone_ops_<dataset>_<8 hex>` of
        `warehouse_identity`. Per warehouse, since dlt's tooling finds a pipeline by name in
        one folder per machine user (docs/dlt-tooling.md)."""
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
        """The run lock: beside the DuckDB file (`<file>.lock` for the default workspace,
        `<file>.<dataset>.lock` for a named one), or in the pipelines folder for a dataset on a
        server."""
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
        statements for PostgreSQL, the one exact way in there (docs/destinations.md); dlt's own
        choice elsewhere."""
        return LOADER_FILE_FORMATS.get(self.destination)

    def duckdb_file(self) -> Path | None:
        """The DuckDB file, or None on a server destination: what every step that deals with
        the file itself (its access lock, its lock error, the turn's connection) is given."""
        return self.resolved_database() if self.destination == "duckdb" else None

    def write_lock(self) -> AbstractContextManager[None]:
        """The short lock every write of this dataset takes: each load of a run, and each
        batch the event receiver writes (docs/events.md, "Applying events"). On DuckDB it is
        the file's access lock; on a server, an advisory `flock` beside the run lock
        (`<run lock>.write`), one per dataset, so a batch of events lands between two loads
        of a run, never inside one, and never after a run read what it is about to load."""
        if self.destination == "duckdb":
            return lock.access_lock(self.duckdb_file())
        path = self.lock_path()
        return lock.reentrant_lock(path.with_name(path.name + ".write"), "a write")

    def spill_root(self) -> Path:
        """Where a run's walk spills: in the warehouse's sync folder, not in the system temp
        dir, so a run can remove what an earlier killed run left; one folder per workspace,
        so one workspace's run never removes another's live spill."""
        if self.workspace != DEFAULT_WORKSPACE:
            return self.sync_dir() / f"spill-{self.workspace}"
        return self.sync_dir() / "spill"
