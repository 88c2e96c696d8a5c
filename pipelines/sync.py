"""One sync run: take the warehouse's lock, finish what a crashed run left, compare, load,
record the run."""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.configuration.exceptions import (
    ConfigFieldMissingException,
    ConfigurationValueError,
    LookupTraces,
)
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
from sources.drone_ops.config import SourceConfig, checked_tables, read_source_config
from sources.drone_ops.schema import TABLE_COLUMNS
from sources.drone_ops.secrets import redact, register_secret
from sources.drone_ops.transforms import issue_table
from sources.drone_ops.walk import SPILL_PREFIX, ProgressCallback

from .lock import WarehouseBusy, busy_message, ensure_duckdb_free, warehouse_lock
from .models import SCRATCH_PREFIX, DbtTarget
from .warehouse import read_known_state, remove_replayed_rows

log = logging.getLogger(__name__)

PIPELINE_NAME = "drone_ops"
DEFAULT_DATASET = "drone_ops"
# Not `drone_ops.duckdb`: DuckDB names the catalog after the file, and DuckDB 2.0 rejects
# `drone_ops.projects` as ambiguous when catalog and schema (our dataset) share a name.
DEFAULT_DATABASE = "drone_ops_warehouse.duckdb"
DEFAULT_DUCKDB_MEMORY_LIMIT = "128MB"
LOADER_FILE_FORMATS = {"duckdb": "parquet", "postgres": "insert_values"}
# destinations the dbt project is built and tested on (models/profiles.yml has their outputs)
MODEL_DESTINATIONS = ("duckdb", "postgres")


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

    def lock_path(self) -> Path:
        """The run lock: beside the DuckDB file, or in the pipelines folder for a dataset on
        a server."""
        if self.destination == "duckdb":
            database = self.resolved_database().resolve()
            return database.with_name(database.name + ".lock")
        return self.resolved_pipelines_dir() / f"{PIPELINE_NAME}.lock"

    def loader_file_format(self) -> str | None:
        """The file format the load uses: parquet where DuckDB reads it natively; INSERT
        statements for PostgreSQL, the one exact way in there (dlt's CSV COPY forces quoted
        empty strings to NULL, and its parquet path needs the ADBC driver and measured twice
        as slow at small scale); dlt's own choice elsewhere."""
        return LOADER_FILE_FORMATS.get(self.destination)

    def spill_root(self) -> Path:
        """Where a run's walk spills: beside dlt's working folder, not in the system temp
        dir, so a run can remove what an earlier killed run left."""
        return self.resolved_pipelines_dir() / "spill"


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


def apply_runtime_defaults() -> None:
    """Settings every run needs, applied wherever the sync is started from. (Telemetry and
    signal handling are set in `pipelines/__init__.py`: dlt reads them when first imported.)"""
    for name, value in REQUIRED_DLT_SETTINGS.items():
        os.environ.setdefault(name, value)


def source_config(overrides: dict[str, Any] | None = None) -> SourceConfig:
    """Every source setting from dlt's providers (env, .dlt/*.toml), checked."""

    def lookup(name: str) -> Any:
        key = f"{source_settings.CONFIG_SECTION}.{name}"
        return dlt.secrets.get(key) if name == "api_key" else dlt.config.get(key)

    return read_source_config(lookup, overrides)


DATASET_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# dlt package each destination needs beyond the base install, for the message when it is missing
DESTINATION_EXTRAS = {
    "postgres": "dlt[postgres]",
    "bigquery": "dlt[bigquery]",
    "snowflake": "dlt[snowflake]",
    "motherduck": "dlt[motherduck]",
}


def check_target(target: Target) -> None:
    """Checks destination, dataset and database path before anything is created, so a bad
    flag or setting is one line naming it (not an OS error from deep inside a mkdir)."""
    if not DATASET_PATTERN.fullmatch(target.dataset):
        raise ConfigError(
            "--dataset",
            f"{target.dataset!r} is not a plain identifier (letters, digits and _, not starting"
            " with a digit, at most 63 characters)",
        )
    if target.destination == "duckdb":
        setting = "--database" if target.database is not None else "destination.duckdb.credentials"
        database = target.resolved_database()
        _check_database_path(setting, database)
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


def _check_database_path(setting: str, database: Path) -> None:
    if database.is_dir():
        raise ConfigError(setting, f"{database} is a folder; give the path of a DuckDB file")
    check_creatable(setting, database)


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
        raise ConfigError(
            f"destination.{name}.credentials",
            f"is not set: add it to .dlt/secrets.toml or set {env}",
        )
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


def dbt_target(target: Target) -> DbtTarget:
    """Where dbt builds the models: the same DuckDB file or PostgreSQL database the sync
    loads, from the same settings (the connection string is never written anywhere else)."""
    if target.destination == "duckdb":
        return DbtTarget.duckdb(target.resolved_database())
    if target.destination not in MODEL_DESTINATIONS:
        raise ConfigError(
            "--destination",
            f"the dbt models are built and tested on duckdb and postgres only, not"
            f" {target.destination} (run with --no-models, see docs/destinations.md)",
        )
    credentials = destination_credentials(target.destination)
    query = getattr(credentials, "query", None) or {}
    return DbtTarget.postgres(
        host=str(credentials.host),
        port=int(credentials.port or 5432),
        user=str(credentials.username),
        password=str(credentials.password or ""),
        database=str(credentials.database),
        sslmode=str(query.get("sslmode", "prefer")),
    )


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


class DestinationUnreachable(DroneOpsError):
    """The destination server did not answer; retrying later may help (exit 1)."""


# PostgreSQL's words for a refusal that only a settings change can fix
_CREDENTIAL_REFUSALS = ("password authentication failed", "does not exist", "no password")


def ensure_destination_reachable(target: Target) -> None:
    """Opens and closes one connection to a server destination before anything changes, so
    a wrong password or a server that is down is one line naming the cause (not a driver
    traceback half-way through a run)."""
    if target.destination != "postgres":
        return
    import psycopg2

    credentials = destination_credentials(target.destination)
    try:
        psycopg2.connect(credentials.to_native_representation(), connect_timeout=10).close()
    except psycopg2.OperationalError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        where = f"{credentials.host}:{credentials.port}/{credentials.database}"
        if any(refusal in reason for refusal in _CREDENTIAL_REFUSALS):
            raise ConfigError(
                "destination.postgres.credentials",
                f"PostgreSQL at {where} refused them: {redact(reason)}",
            ) from None
        raise DestinationUnreachable(
            f"cannot reach PostgreSQL at {where}: {redact(reason)}"
        ) from None


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


def make_pipeline(target: Target, *, progress: Any = None) -> dlt.Pipeline:
    """A pipeline whose working directory lives beside its DuckDB file, so two warehouses
    never share local state."""
    apply_runtime_defaults()
    pipelines_dir = target.resolved_pipelines_dir()
    if target.destination == "duckdb":
        database = target.resolved_database().resolve()
        database.parent.mkdir(parents=True, exist_ok=True)
        credentials = DuckDbCredentials(
            str(database), global_config={"memory_limit": duckdb_memory_limit()}
        )
        destination: Any = dlt.destinations.duckdb(credentials=credentials)
    elif target.destination == "postgres":
        # resolved here so a connection string without a password works (see above)
        destination = dlt.destinations.postgres(credentials=destination_credentials("postgres"))
    else:
        destination = target.destination
    return dlt.pipeline(
        pipeline_name=PIPELINE_NAME,
        destination=destination,
        dataset_name=target.dataset,
        pipelines_dir=str(pipelines_dir),
        progress=progress,
    )


def finish_pending(pipeline: dlt.Pipeline) -> str | None:
    """Loads what an interrupted run extracted; drops it if it cannot be loaded, because
    the next comparison with the warehouse re-derives every change anyway.

    A package damaged by a kill mid-move can defeat dlt's own abort too; its folders are then
    removed by hand, so one damaged package never wedges every later run."""
    if not pipeline.has_pending_data:
        return None
    try:
        pipeline.normalize()
        pipeline.load()
        return "loaded the data an interrupted run had left pending"
    except Exception as exc:
        cause = _root_cause(exc)
    try:
        pipeline.abort_packages()
    except Exception:
        _remove_pending_folders(Path(pipeline.working_dir))
    # a normalize that failed half-way leaves its output in load/new, which no abort removes
    _remove_pending_folders(Path(pipeline.working_dir), queues=("load/new",))
    log.warning("dropped pending data of an interrupted run: %s", cause)
    return "dropped pending data of an interrupted run (it is re-derived this run)"


def _remove_pending_folders(
    working_dir: Path,
    queues: Sequence[str] = ("normalize/extracted", "load/normalized", "load/new"),
) -> list[str]:
    """Empties dlt's queues of packages not yet loaded; returns what it removed."""
    removed: list[str] = []
    for queue in queues:
        folder = working_dir / queue
        if not folder.is_dir():
            continue
        for package in folder.iterdir():
            if package.is_dir():
                shutil.rmtree(package, ignore_errors=True)
            else:
                package.unlink(missing_ok=True)
            removed.append(f"{queue}/{package.name}")
    return removed


def remove_leftovers(target: Target, pipeline: dlt.Pipeline) -> list[str]:
    """Removes what killed runs left, under the lock (so no other run is using it): spill and
    dbt scratch folders, and packages half-moved into dlt's `load/new` (a package is written
    there and then moved on, so one still there was never loaded; its changes are re-derived
    by this run's comparison)."""
    removed: list[str] = []
    spill_root = target.spill_root()
    if spill_root.is_dir():
        for prefix in (SPILL_PREFIX, SCRATCH_PREFIX):
            for leftover in spill_root.glob(f"{prefix}*"):
                shutil.rmtree(leftover, ignore_errors=True)
                removed.append(leftover.name)
    return removed + _remove_pending_folders(Path(pipeline.working_dir), queues=("load/new",))


def run_sync(
    target: Target,
    *,
    tables: Sequence[str] | None = None,
    full_refresh: bool = False,
    allow_mass_delete: bool = False,
    progress: ProgressCallback | None = None,
    source_overrides: dict[str, Any] | None = None,
    stop: threading.Event | None = None,
) -> SyncOutcome:
    """Runs one sync and records it in `_sync_runs`; never raises for a failed table.

    Raises `ConfigError` for a bad setting and `WarehouseBusy` when another run or process
    holds the warehouse, in both cases before anything is changed. `stop`, once set (by a
    signal handler), interrupts the run: tables whose walk had not finished load nothing
    and are recorded as `interrupted`."""
    apply_runtime_defaults()
    config = source_config(source_overrides)
    tables = checked_tables(tables)
    check_target(target)
    outcome = SyncOutcome(report=SyncReport(run_id="", started_at=datetime.now(UTC)))
    with warehouse_lock(target.lock_path(), outcome.notes):
        if target.destination == "duckdb":
            ensure_duckdb_free(target.resolved_database())
        ensure_destination_reachable(target)
        try:
            return _locked_run(
                target, config, outcome, tables, full_refresh, allow_mass_delete, progress, stop
            )
        except DroneOpsError:
            raise
        except Exception as exc:
            message = (
                busy_message(target.resolved_database(), exc)
                if target.destination == "duckdb"
                else None
            )
            if message is not None:
                raise WarehouseBusy(message) from None
            raise


def _locked_run(
    target: Target,
    config: SourceConfig,
    outcome: SyncOutcome,
    tables: tuple[str, ...],
    full_refresh: bool,
    allow_mass_delete: bool,
    progress: ProgressCallback | None,
    stop: threading.Event | None,
) -> SyncOutcome:
    started = time.monotonic()
    # Arrow's default pool (jemalloc/mimalloc) keeps freed batches mapped; the system pool
    # hands them back, which keeps a long walk's footprint flat
    pa.set_memory_pool(pa.system_memory_pool())
    run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    report = outcome.report = SyncReport(run_id=run_id, started_at=datetime.now(UTC))
    if target.destination == "duckdb":
        outcome.database = target.resolved_database()
    pipeline = make_pipeline(target)
    leftovers = remove_leftovers(target, pipeline)
    if leftovers:
        outcome.notes.append(f"removed what an interrupted run left: {', '.join(leftovers)}")
    note = finish_pending(pipeline)
    if note:
        outcome.notes.append(note)
    replayed = remove_replayed_rows(pipeline)
    if replayed:
        outcome.notes.append(f"removed {replayed} rows a replayed load had written twice")
    known = read_known_state(
        pipeline,
        delivery_overlap_seconds=config.delivery_overlap_seconds,
        full_refresh=full_refresh,
    )
    options = RunOptions(
        run_id=run_id,
        started_at=report.started_at,
        tables=tables,
        known=known,
        allow_mass_delete=allow_mass_delete,
        progress=progress,
        report=report,
        spill_root=target.spill_root(),
        stop=stop,
    )
    source = build_source(options, config)
    load_started = time.monotonic()
    try:
        # the list tables load while the delivery-log chains are still walking
        for group in source_settings.LOAD_GROUPS:
            selected = [name for name in group if name in source.resources]
            if not selected:
                continue
            if stop is not None and stop.is_set():
                if options.walk is not None:
                    options.walk.interrupt()
                _mark_interrupted(report, selected)
                continue
            _load(target, pipeline, source.with_resources(*selected), report, selected, outcome)
    finally:
        if options.walk is not None:
            walk_issues = list(options.walk.issues)
            options.walk.close()
        else:
            walk_issues = []
    if stop is not None and stop.is_set():
        _mark_interrupted(report, tables)
    outcome.load_seconds = time.monotonic() - load_started
    outcome.issues = report.issues = len(walk_issues)
    outcome.total_seconds = time.monotonic() - started
    _record_run(target, pipeline, report, walk_issues, outcome)
    return outcome


def _mark_interrupted(report: SyncReport, tables: Sequence[str]) -> None:
    """Tables a stopped run never got to (or whose load it skipped) load nothing."""
    for name in tables:
        result = report.table(name)
        if result.status == "skipped" or (result.status == "success" and not result.loaded):
            result.status = "interrupted"
            result.error = f"{name}: the run was interrupted before this table was loaded"


def _load(
    target: Target,
    pipeline: dlt.Pipeline,
    source: Any,
    report: SyncReport,
    tables: Sequence[str],
    outcome: SyncOutcome,
) -> None:
    """Extracts, normalizes and loads one group of tables; a failure fails only that group."""
    try:
        pipeline.run(source, loader_file_format=target.loader_file_format())  # type: ignore[arg-type]
    except PipelineStepFailed as exc:
        error = f"{exc.step} failed: {_root_cause(exc)}"
        outcome.load_error = error if outcome.load_error is None else outcome.load_error
        for name in tables:
            result = report.table(name)
            if result.status in ("success", "skipped"):
                result.status = "failed"
                result.error = f"{name}: {error}"
        return
    for name in tables:
        result = report.table(name)
        result.loaded = result.status == "success"


def build_source(options: RunOptions, config: SourceConfig) -> Any:
    """The source with every setting passed explicitly: dlt resolves nothing again."""
    return drone_ops(run=options, **config.source_args())


def _record_run(
    target: Target,
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
            "error": redact(result.error) if result.error else None,
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
    # created on the first run even when empty, so dashboards and tests can always read it
    resources.append(
        dlt.resource(
            [issue_table(issues)] if issues else [dlt.mark.materialize_table_schema()],
            name=source_settings.ISSUES_TABLE,
            write_disposition="append",
            columns=issue_columns(),
        )
    )
    try:
        pipeline.run(resources, loader_file_format=target.loader_file_format())  # type: ignore[arg-type]
    except PipelineStepFailed as exc:
        outcome.notes.append(
            f"could not record the run in {source_settings.RUNS_TABLE}: {_root_cause(exc)}"
        )


def issue_columns() -> dict[str, Any]:
    """`_sync_issues` columns, declared so the table exists before its first row."""
    return {
        column.name: {"data_type": "text", "nullable": True}
        for column in TABLE_COLUMNS[source_settings.ISSUES_TABLE]
    }


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
