"""Whether, and where, a command publishes the BI snapshot: decided and checked before the
command changes anything, so a bad path or setting is exit 2 before any sync starts
(docs/bi.md). Writing the file is `snapshot.py`'s."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dlt

from drone_ops_sync.sources.drone_ops import ConfigError

from ..defaults import SNAPSHOT_CONFIG_KEY, SNAPSHOT_RUNS_CONFIG_KEY
from ..run.destination import check_creatable

CONFIG_KEY = SNAPSHOT_CONFIG_KEY
RUNS_CONFIG_KEY = SNAPSHOT_RUNS_CONFIG_KEY
DEFAULT_SUFFIX = "_bi"
_OFF_WORDS = frozenset({"false", "off", "no"})
_ON_WORDS = frozenset({"true", "on", "yes"})


@dataclass(frozen=True)
class SnapshotPlan:
    """Where a command publishes its snapshot, decided (and checked) before it changes anything."""

    path: Path
    include_raw: bool
    include_runs: bool = True


def marts_schema(dataset: str) -> str:
    """The dbt marts' schema (models/macros/generate_schema_name.sql)."""
    return f"{dataset}_marts"


def default_snapshot_path(database: Path) -> Path:
    """`<warehouse stem>_bi.duckdb` beside the warehouse: found next to it, and named so that
    `*.duckdb` ignore rules and file pickers treat it like the warehouse."""
    return database.with_name(f"{database.stem}{DEFAULT_SUFFIX}{database.suffix or '.duckdb'}")


def snapshot_plan(
    database: Path,
    dataset: str,
    *,
    path_flag: Path | None = None,
    off_flag: bool = False,
    include_raw: bool = False,
) -> SnapshotPlan | None:
    """The snapshot a command on a DuckDB warehouse publishes (`configured_snapshot`), or None;
    a path that cannot work is a `ConfigError` naming its flag or setting, before any sync."""
    located = configured_snapshot(database, path_flag=path_flag, off_flag=off_flag)
    if located is None:
        if include_raw:
            setting = "--no-snapshot" if off_flag else CONFIG_KEY
            raise ConfigError(
                "--snapshot-raw",
                f"the BI snapshot is turned off ({setting}), so there is nothing to add the raw"
                " tables to: drop --snapshot-raw, or turn the snapshot on",
            )
        return None
    setting, path = located
    check_snapshot_path(setting, path, database, dataset)
    include_runs = not _is_off(dlt.config.get(RUNS_CONFIG_KEY))
    return SnapshotPlan(path=path, include_raw=include_raw, include_runs=include_runs)


def configured_snapshot(
    database: Path, *, path_flag: Path | None = None, off_flag: bool = False
) -> tuple[str, Path] | None:
    """The snapshot's path and the flag or setting that names it, or None when it is off:
    `--no-snapshot`, `--snapshot PATH`, `destination.duckdb.bi_snapshot`, then the default
    beside the warehouse. Not checked for writing: `metrics` and `dashboard` only read it."""
    configured: Any = None if off_flag or path_flag is not None else dlt.config.get(CONFIG_KEY)
    if off_flag or _is_off(configured):
        return None
    if path_flag is not None:
        return "--snapshot", path_flag
    if configured is None or _is_on(configured):
        return CONFIG_KEY, default_snapshot_path(database)
    if isinstance(configured, str) and configured.strip():
        return CONFIG_KEY, Path(configured.strip())
    raise ConfigError(
        CONFIG_KEY,
        f"{configured!r} is not a file path; expected the path of the snapshot file, or"
        " false to publish none",
    )


def _is_off(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in _OFF_WORDS)


def _is_on(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _ON_WORDS)


def check_snapshot_path(setting: str, snapshot: Path, database: Path, dataset: str) -> None:
    """Refuses a snapshot path that would overwrite the warehouse, that cannot be written, or
    whose name DuckDB would confuse with a schema in queries."""
    if snapshot.absolute().resolve() == database.absolute().resolve():
        raise ConfigError(
            setting, f"{snapshot} is the warehouse itself; the snapshot needs a file of its own"
        )
    if snapshot.is_dir():
        raise ConfigError(setting, f"{snapshot} is a folder; give the path of a file")
    # DuckDB names a file's catalog after its stem; `drone_ops_marts.dim_jobs` would then be
    # ambiguous in the snapshot (DuckDB 2.0 refuses such a query)
    schemas = {dataset, marts_schema(dataset), f"{dataset}_stg", "main"}
    if snapshot.stem in schemas:
        raise ConfigError(
            setting,
            f"the file {snapshot.name} would name the DuckDB catalog {snapshot.stem!r}, the same"
            " as a schema in it; DuckDB cannot tell them apart in queries: rename the file",
        )
    check_creatable(setting, snapshot)
