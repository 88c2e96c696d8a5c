"""The one door to the warehouse: every connection this package opens to it (`open_duckdb` for
a writer, `read_only` for every reader, `connect_postgres`; dlt's own through the workspace's
pipeline, opened once per turn by `pipelines/session.py`), what a held, missing or refused one
says (one line, wherever it was raised), and the locks a step (`step`), a write (`writing`)
and a model build (`models_lock`) take, in the order `lock.py` writes down.

The kept file (`KeptFile`): each open of a DuckDB file reads its catalog and each close
checkpoints, which costs more CPU than the few statements of a quiet run's step or of one batch
of events; while a connection is held here, every connection opened meanwhile in this process
(dlt's included) is a cheap handle on the same database instance. It is kept only with the
file's access lock and let go as soon as another step waits for it; who holds it and when it
is let go: docs/architecture.md, "One owner per lifecycle".
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import dlt
import duckdb

from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import redact

from .credentials import destination_credentials
from .disk_full import DiskFull, disk_full_as_error
from .errors import is_disk_full
from .lock import (
    ACCESS_WAIT_SECONDS,
    WarehouseBusy,
    access_lock,
    access_lock_path,
    holds_lock,
    lock_wanted,
    waited_lock,
)
from .target import Target

log = logging.getLogger(__name__)

DUCKDB_SETTING = "--database / destination.duckdb.credentials"
"""Where a DuckDB file's path comes from, named by the error when it is no DuckDB database."""
SNAPSHOT_SETTING = "--snapshot / destination.duckdb.bi_snapshot"
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
# PostgreSQL's words for a refusal that only a settings change can fix
_CREDENTIAL_REFUSALS = ("password authentication failed", "does not exist", "no password")


class WarehouseMissing(DroneOpsError):
    """No DuckDB file where a reader looked (no sync has run there yet)."""


class DestinationUnreachable(DroneOpsError):
    """The destination server did not answer; retrying later may help (exit 1)."""


def open_duckdb(
    database: Path, busy: type[DroneOpsError] = WarehouseBusy
) -> duckdb.DuckDBPyConnection:
    """A writer's connection to the existing DuckDB file, or `busy` (`WarehouseBusy` for a
    run, exit 75; the event applier's own kind, retried next tick) when another process holds
    it, a `ConfigError` when it is no DuckDB database (a full disk is raised as it is, for
    `disk_full.py` to say). Opened with DuckDB's defaults, as dlt opens it, so dlt's own
    connections in this process share its database instance (`KeptFile`)."""
    try:
        return duckdb.connect(str(database.resolve()))
    except duckdb.Error as exc:
        raise _refused(database, exc, busy(busy_message(database, exc) or "")) from None


@contextmanager
def read_only(
    database: Path, setting: str = DUCKDB_SETTING, config: dict[str, Any] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The one read-only connection to a DuckDB file, for every reader (the BI snapshot's:
    metrics, dashboard, questions, the demo; `drone-sync status`; the snapshot's copy of the
    warehouse), closed when the block ends. Never creates the file: `WarehouseMissing` when
    there is none; `WarehouseBusy` naming the process that holds it for writing (readers share
    a file, a writer excludes them); a `ConfigError` naming `setting` when it is no DuckDB
    database; `DiskFull` when there is no room to open it. What the block's own queries raise
    is the reader's to say."""
    if not database.is_file():
        raise WarehouseMissing(f"no DuckDB file at {database.absolute()}")
    try:
        connection = duckdb.connect(str(database), read_only=True, config=config or {})
    except duckdb.Error as exc:
        holder = duckdb_holder(exc)
        busy = WarehouseBusy(
            f"{database.absolute()} is open for writing in another process ({holder}), usually"
            " a drone-sync run: it can be read once that lets go; try again later"
        )
        if is_disk_full(exc):
            raise DiskFull(
                f"no space left on device to open {database}: {redact(str(exc))}"
            ) from None
        raise _refused(database, exc, busy, setting) from None
    try:
        yield connection
    finally:
        connection.close()


def _refused(
    database: Path, exc: duckdb.Error, busy: DroneOpsError, setting: str = DUCKDB_SETTING
) -> BaseException:
    """What an open of `database` that DuckDB refused with `exc` raises: `busy` when another
    process holds the file; `exc` itself for a full disk (said by `disk_full.py`); else a
    `ConfigError`: the file is no DuckDB database."""
    if duckdb_holder(exc) is not None:
        return busy
    if is_disk_full(exc):
        return exc
    return ConfigError(
        setting, f"{database} cannot be opened as a DuckDB database ({redact(str(exc))})"
    )


def duckdb_holder(error: BaseException) -> str | None:
    """Who holds a DuckDB file, from DuckDB's cross-process lock error ("PID n, program", or
    "another process" when DuckDB did not say); None if `error` is another error."""
    match = _HOLDER.search(str(error))
    if match is None and "Could not set lock on file" not in str(error):
        return None
    return f"PID {match['pid']}, {match['program']}" if match else "another process"


def busy_message(database: Path, error: BaseException) -> str | None:
    """The one line for DuckDB's cross-process lock error, or None if `error` is another."""
    holder = duckdb_holder(error)
    if holder is None:
        return None
    return (
        f"{database} is open in another process ({holder}); DuckDB lets no"
        " other process write while a program (a BI tool, a notebook, DBeaver, even a"
        " read-only one) holds the file: close it or disconnect it there, then run again"
    )


@contextmanager
def duckdb_busy_as(
    database: Path | None, kind: type[DroneOpsError] = WarehouseBusy
) -> Iterator[None]:
    """Turns DuckDB's cross-process lock error, raised anywhere in the block (deep inside dlt
    as often as not), into the one line of `busy_message` as `kind` (`WarehouseBusy` for a
    run, exit 75; the event applier's own kind, retried next tick); other errors pass
    unchanged. No-op for a server destination (None)."""
    try:
        yield
    except DroneOpsError:
        raise
    except Exception as exc:
        message = busy_message(database, exc) if database is not None else None
        if message is not None:
            raise kind(message) from None
        raise


def connect_postgres(*, read_only: bool = False) -> Any:
    """A connection to the PostgreSQL destination (its credentials from dlt's settings), in
    read-only transactions with `read_only`. A server that refuses the credentials is a
    `ConfigError`, one that does not answer within 10 s `DestinationUnreachable`: one line
    naming the cause, never a driver traceback."""
    import psycopg2

    credentials = destination_credentials("postgres")
    options = {"options": "-c default_transaction_read_only=on"} if read_only else {}
    try:
        return psycopg2.connect(
            credentials.to_native_representation(), connect_timeout=10, **options
        )
    except psycopg2.OperationalError as exc:
        reason = redact(" ".join(str(exc).split()) or type(exc).__name__)
        where = f"{credentials.host}:{credentials.port}/{credentials.database}"
        if any(refusal in reason for refusal in _CREDENTIAL_REFUSALS):
            raise ConfigError(
                "destination.postgres.credentials", f"PostgreSQL at {where} refused them: {reason}"
            ) from None
        raise DestinationUnreachable(f"cannot reach PostgreSQL at {where}: {reason}") from None


def ensure_warehouse_free(target: Target) -> None:
    """Before a step changes anything: no other process holds the DuckDB file (`WarehouseBusy`
    naming it; the step's own open would fail the same way, but deep inside dlt or dbt), and
    a server destination answers (one connection opened and closed)."""
    database = target.duckdb_file()
    if database is not None and database.exists():
        open_duckdb(database.resolve()).close()
    ensure_destination_reachable(target)


def ensure_destination_reachable(target: Target) -> None:
    """Opens and closes one connection to a server destination before anything changes, so a
    wrong password or a server that is down is one line naming the cause (not a driver
    traceback half-way through a run); nothing for DuckDB."""
    if target.destination == "postgres":
        connect_postgres().close()


def release_dbt_duckdb() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in-process after an invocation.

    Without this the file stays open read-write in this process, and a later read-only
    connection (`read_only`) or another configuration fails with "Can't open a
    connection to same database file with a different configuration".
    """
    from dbt.adapters.duckdb import connections

    manager = connections.DuckDBConnectionManager
    with manager._LOCK:
        environment = manager._ENV
        manager._ENV = None
        if environment is not None:
            environment.close()


class KeptFile:
    """One DuckDB file's kept connection and its access lock, and what a step opened in the
    file and asked to keep with them (`keep`), owned by one holder and used from that
    holder's thread. Its steps are the holder's outermost holds of the lock (a
    load's write lock nests inside a step, never the other way round), so letting the kept
    lock go never pulls it from under a holder. `database` None: a server destination; `busy`
    what a file another process holds raises (`open_duckdb`)."""

    def __init__(
        self,
        database: Path | None,
        hold_seconds: float | None = None,
        busy: type[DroneOpsError] = WarehouseBusy,
    ) -> None:
        self.database = database
        self.hold_seconds = hold_seconds
        """The longest the file is kept through steps that follow one another; None: no limit."""
        self.busy = busy
        self._held = ExitStack()
        self._since: float | None = None

    @property
    def is_open(self) -> bool:
        """Whether the file's access lock is kept, with what is open in the file: a waiter
        must be looked for."""
        return self.database is not None and self._since is not None

    @contextmanager
    def step(self) -> Iterator[None]:
        """A step that opens the warehouse: inside the file's access lock, with the file held
        open (opened now unless an earlier step kept it; a file not created yet is left to
        the step). After the step what is kept stays unless it is `due` to be let go."""
        database = self.database
        nested = False
        try:
            if database is None:
                yield
            elif self.is_open:  # kept from an earlier step, with its access lock
                with access_lock(database):
                    yield
            elif holds_lock(access_lock_path(database)):
                nested = True  # inside a lock an outer holder lets go of: nothing is kept
                with access_lock(database):
                    yield
            else:
                self._held.enter_context(access_lock(database))
                if database.exists():
                    self._held.callback(open_duckdb(database, self.busy).close)
                    self._kept()
                yield
        except BaseException:
            self.release()
            raise
        if nested or self._since is None or self.due():
            self.release()  # nothing kept (the lock goes with the step), or let go now

    def keep(self, close: Callable[[], None]) -> None:
        """Keeps something the step opened (a workspace's SQL client) until the file is let
        go, and `close`s it first then; on a server, until the holder releases or
        `hold_seconds` pass. Called inside a step."""
        self._held.callback(close)
        self._kept()

    def wanted(self) -> bool:
        """Whether another step waits for the file kept here."""
        database = self.database
        return self.is_open and database is not None and lock_wanted(access_lock_path(database))

    def due(self) -> bool:
        """Whether to let the file go now: a step waits for it, or it was held long enough."""
        limit, since = self.hold_seconds, self._since
        if limit is not None and since is not None and time.monotonic() - since >= limit:
            return True
        return self.wanted()

    def release(self) -> None:
        """Closes the kept connection, then lets the file's access lock go. A close that
        fails (a full disk during DuckDB's checkpoint) is logged, not raised over the error
        the holder may be ending with: the file keeps its write-ahead log, which the next
        open replays, and the lock is let go all the same."""
        held, self._held, self._since = self._held, ExitStack(), None
        try:
            held.close()
        except Exception as exc:
            log.warning("closing the warehouse file failed: %s", redact(str(exc))[:300])

    def _kept(self) -> None:
        if self._since is None:
            self._since = time.monotonic()


@contextmanager
def step(target: Target, file: KeptFile, pipeline: dlt.Pipeline | None = None) -> Iterator[None]:
    """A step of a turn on the warehouse (`pipelines/session.py`, `run/sync.py`): the turn's
    kept file (opened again if it was let go) and its access lock; a full disk (`pipeline`'s
    refused load cleaned up) and a file another process holds each said as one line, the
    file's opening included."""
    with (
        disk_full_as_error(target, pipeline),
        duckdb_busy_as(target.duckdb_file(), file.busy),
        file.step(),
    ):
        yield


@contextmanager
def writing(target: Target, pipeline: dlt.Pipeline) -> Iterator[None]:
    """What every write of a run through its pipeline is inside (each load, the record's SQL):
    the dataset's write lock (`Target.write_lock`, the event receiver's too), a full disk said
    as one line with what the refused load left removed."""
    with target.write_lock(), disk_full_as_error(target, pipeline):
        yield


@contextmanager
def models_lock(target: Target) -> Iterator[None]:
    """The lock of one model build, waited for (up to `ACCESS_WAIT_SECONDS`, then
    `WarehouseBusy`): on DuckDB the file's access lock for the whole build, so no workspace
    loads meanwhile and no other build runs; on a server the warehouse's models lock.

    Why one build at a time per warehouse, whoever starts it (a workspace's run, a fleet run,
    `drone-sync models`, Dagster's dbt assets, the marts follower): they share the build
    record, and two builds replacing the same marts at once would fail each other."""
    database = target.duckdb_file()
    if database is not None:
        with access_lock(database):
            yield
        return
    path = target.models_target().sync_dir() / "models.lock"
    with waited_lock(path, ACCESS_WAIT_SECONDS, "the model build"):
        yield
