"""One sync run: finish what a crashed run left, compare, load, record the run."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.configuration.exceptions import ConfigFieldMissingException
from dlt.destinations.impl.duckdb.configuration import DuckDbCredentials
from dlt.pipeline.exceptions import PipelineStepFailed

from sources.drone_ops import (
    ConfigError,
    DroneOpsError,
    RunOptions,
    SyncReport,
    drone_ops,
)
from sources.drone_ops import settings as source_settings
from sources.drone_ops.transforms import issue_table
from sources.drone_ops.walk import ProgressCallback

from .warehouse import read_known_state, remove_replayed_rows

log = logging.getLogger(__name__)

PIPELINE_NAME = "drone_ops"
DEFAULT_DATASET = "drone_ops"
# Not `drone_ops.duckdb`: DuckDB names the catalog after the file, and DuckDB 2.0 rejects
# `drone_ops.projects` as ambiguous when catalog and schema (our dataset) share a name.
DEFAULT_DATABASE = "drone_ops_warehouse.duckdb"
DEFAULT_DUCKDB_MEMORY_LIMIT = "128MB"


@dataclass
class Target:
    """Where a run loads: destination, database file (DuckDB) and dataset."""

    destination: str = "duckdb"
    database: Path | None = None
    dataset: str = DEFAULT_DATASET
    pipelines_dir: Path | None = None

    def resolved_database(self) -> Path:
        if self.database is not None:
            return self.database
        configured: Any = dlt.config.get("destination.duckdb.credentials")
        return Path(configured if isinstance(configured, str) else DEFAULT_DATABASE)


@dataclass
class SyncOutcome:
    report: SyncReport
    load_seconds: float = 0.0
    total_seconds: float = 0.0
    load_error: str | None = None
    issues: int = 0
    database: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.load_error is None and self.report.ok


# Settings the sync's correctness depends on, applied wherever the CLI runs from.
REQUIRED_DLT_SETTINGS = {
    # scd2 on Arrow rows needs a row key; the row version is our deterministic _row_hash
    "NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_ID": "true",
    # every row says which load wrote it (lineage for BI users and our tests)
    "NORMALIZE__PARQUET_NORMALIZER__ADD_DLT_LOAD_ID": "true",
    # resources run one after the other; they share one walk
    "EXTRACT__NEXT_ITEM_MODE": "fifo",
}


def duckdb_memory_limit() -> str:
    """DuckDB's working memory for loads and merges: it spills to disk beyond this, so the
    sync's footprint stays flat as the workspace grows (DuckDB's own default is 80% of RAM)."""
    configured: Any = dlt.config.get("destination.duckdb.memory_limit")
    return str(configured or DEFAULT_DUCKDB_MEMORY_LIMIT)


def make_pipeline(target: Target, *, progress: Any = None) -> dlt.Pipeline:
    """A pipeline whose working directory lives beside its DuckDB file, so two warehouses
    never share local state."""
    for name, value in REQUIRED_DLT_SETTINGS.items():
        os.environ.setdefault(name, value)
    if target.destination == "duckdb":
        database = target.resolved_database().resolve()
        if database.stem == target.dataset:
            raise ConfigError(
                "--database / destination.duckdb.credentials",
                f"the file {database.name} would name the DuckDB catalog {database.stem!r}, the"
                f" same as the dataset {target.dataset!r}; DuckDB cannot tell them apart in"
                " queries. Rename the file (default drone_ops_warehouse.duckdb) or change"
                " --dataset",
            )
        database.parent.mkdir(parents=True, exist_ok=True)
        credentials = DuckDbCredentials(
            str(database), global_config={"memory_limit": duckdb_memory_limit()}
        )
        destination: Any = dlt.destinations.duckdb(credentials=credentials)
        pipelines_dir: Path | None = target.pipelines_dir or database.parent / ".dlt_pipelines"
    else:
        destination = target.destination
        pipelines_dir = target.pipelines_dir
    return dlt.pipeline(
        pipeline_name=PIPELINE_NAME,
        destination=destination,
        dataset_name=target.dataset,
        pipelines_dir=str(pipelines_dir) if pipelines_dir else None,  # type: ignore[arg-type]
        progress=progress,
    )


def finish_pending(pipeline: dlt.Pipeline) -> str | None:
    """Loads what an interrupted run extracted; drops it if it cannot be loaded, because
    the next comparison with the warehouse re-derives every change anyway."""
    if not pipeline.has_pending_data:
        return None
    try:
        pipeline.normalize()
        pipeline.load()
        return "loaded the data an interrupted run had left pending"
    except Exception as exc:
        pipeline.drop_pending_packages()
        log.warning("dropped pending data of an interrupted run: %s", _root_cause(exc))
        return "dropped pending data of an interrupted run (it is re-derived this run)"


def run_sync(
    target: Target,
    *,
    tables: Sequence[str] | None = None,
    full_refresh: bool = False,
    allow_mass_delete: bool = False,
    progress: ProgressCallback | None = None,
    source_overrides: dict[str, Any] | None = None,
) -> SyncOutcome:
    """Runs one sync and records it in `_sync_runs`; never raises for a failed table."""
    started = time.monotonic()
    # Arrow's default pool (jemalloc/mimalloc) keeps freed batches mapped; the system pool
    # hands them back, which keeps a long walk's footprint flat
    pa.set_memory_pool(pa.system_memory_pool())
    run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    report = SyncReport(run_id=run_id, started_at=datetime.now(UTC))
    outcome = SyncOutcome(report=report)
    if target.destination == "duckdb":
        outcome.database = target.resolved_database()
    pipeline = make_pipeline(target)
    note = finish_pending(pipeline)
    if note:
        outcome.notes.append(note)
    replayed = remove_replayed_rows(pipeline)
    if replayed:
        outcome.notes.append(f"removed {replayed} rows a replayed load had written twice")
    overlap = int(
        _config("delivery_overlap_seconds", source_settings.DEFAULT_DELIVERY_OVERLAP_SECONDS)
    )
    known = read_known_state(pipeline, delivery_overlap_seconds=overlap, full_refresh=full_refresh)
    options = RunOptions(
        run_id=run_id,
        started_at=report.started_at,
        tables=tuple(tables) if tables else source_settings.ALL_TABLES,
        known=known,
        allow_mass_delete=allow_mass_delete,
        progress=progress,
        report=report,
    )
    source = build_source(options, source_overrides or {})
    load_started = time.monotonic()
    try:
        # the list tables load while the delivery-log chains are still walking
        for group in source_settings.LOAD_GROUPS:
            selected = [name for name in group if name in source.resources]
            if selected:
                _load(pipeline, source.with_resources(*selected), report, selected, outcome)
    finally:
        if options.walk is not None:
            walk_issues = list(options.walk.issues)
            options.walk.close()
        else:
            walk_issues = []
    outcome.load_seconds = time.monotonic() - load_started
    outcome.issues = report.issues = len(walk_issues)
    outcome.total_seconds = time.monotonic() - started
    _record_run(pipeline, report, walk_issues, outcome)
    return outcome


def _load(
    pipeline: dlt.Pipeline,
    source: Any,
    report: SyncReport,
    tables: Sequence[str],
    outcome: SyncOutcome,
) -> None:
    """Extracts, normalizes and loads one group of tables; a failure fails only that group."""
    try:
        pipeline.run(source, loader_file_format="parquet")
    except PipelineStepFailed as exc:
        error = f"{exc.step} failed: {_root_cause(exc)}"
        outcome.load_error = error if outcome.load_error is None else outcome.load_error
        for name in tables:
            result = report.tables.get(name)
            if result is not None and result.status == "success" and result.wrote:
                result.status = "failed"
                result.error = error


def build_source(options: RunOptions, overrides: dict[str, Any]) -> Any:
    """The configured source, with missing settings turned into one clear error."""
    try:
        return drone_ops(run=options, **overrides)
    except ConfigFieldMissingException as exc:
        missing = ", ".join(f"{source_settings.CONFIG_SECTION}.{name}" for name in exc.fields)
        env = ", ".join(f"SOURCES__DRONE_OPS__{name.upper()}" for name in exc.fields)
        raise ConfigError(
            missing,
            f"is not set: add it to .dlt/config.toml (api_key to .dlt/secrets.toml) or set {env}",
        ) from None


def _config(name: str, default: Any) -> Any:
    value: Any = dlt.config.get(f"{source_settings.CONFIG_SECTION}.{name}")
    return default if value is None else value


def _record_run(
    pipeline: dlt.Pipeline,
    report: SyncReport,
    issues: list[dict[str, str | None]],
    outcome: SyncOutcome,
) -> None:
    """Appends one `_sync_runs` row per table (and the run's `_sync_issues`)."""
    finished = datetime.now(UTC)
    rows = [
        {
            "run_id": report.run_id,
            "resource": result.table,
            "started_at": report.started_at,
            "finished_at": finished,
            "status": result.status,
            "pages": result.pages,
            "requests": result.requests,
            "retries": result.retries,
            "rows_seen": result.rows_seen,
            "rows_new": result.new,
            "rows_changed": result.changed,
            "rows_retired": result.retired,
            "seconds": round(result.seconds, 3),
            "error": result.error,
            "scope": result.scope,
        }
        for result in report.tables.values()
    ]
    resources = [
        dlt.resource(
            rows,
            name=source_settings.RUNS_TABLE,
            write_disposition="append",
            columns={
                "error": {"data_type": "text", "nullable": True},
                "scope": {"data_type": "text", "nullable": True},
            },
        )
    ]
    if issues:
        resources.append(
            dlt.resource(
                issue_table(issues), name=source_settings.ISSUES_TABLE, write_disposition="append"
            )
        )
    try:
        pipeline.run(resources, loader_file_format="parquet")
    except PipelineStepFailed as exc:
        outcome.notes.append(f"could not record the run in {source_settings.RUNS_TABLE}: {exc}")


def _root_cause(exc: BaseException) -> str:
    """The innermost error of dlt's wrapped exceptions, which is the one that says why."""
    seen: set[int] = set()
    current: BaseException = exc
    while id(current) not in seen:
        seen.add(id(current))
        inner = getattr(current, "exception", None) or current.__cause__ or current.__context__
        if not isinstance(inner, BaseException):
            break
        current = inner
    if isinstance(current, DroneOpsError):
        return str(current)
    return f"{type(current).__name__}: {current}"
