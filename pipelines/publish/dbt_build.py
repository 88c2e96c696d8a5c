"""Build the dbt project in `models/` over the synced warehouse, in-process.

dbt runs in-process through `dbtRunner` (measured faster than dlt's dbt runner, see
docs/models.md). The destination path and dataset reach `models/profiles.yml` through the
environment variables `DRONE_SYNC_DUCKDB_PATH` and `DRONE_SYNC_DATASET`, set only for the call,
so the credentials live in one place: the caller's destination.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import pathlib
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from drone_ops_sync.sources.drone_ops import ConfigError

from ..defaults import MODEL_DESTINATIONS
from ..run.credentials import destination_credentials
from ..run.door import release_dbt_duckdb
from ..run.recovery import SCRATCH_PREFIX
from ..run.target import Target
from .failing_rows import broken_checks, failed_check_tests

PROJECT_DIR = pathlib.Path(str(importlib.resources.files("drone_ops_sync.models")))
"""The dbt project: package data in a wheel, `models/` in the repository (pyproject.toml)."""
PATH_ENV = "DRONE_SYNC_DUCKDB_PATH"
DATASET_ENV = "DRONE_SYNC_DATASET"

# dbt reads env vars from the process environment; one build at a time per process.
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True)
class NodeFailure:
    """A model, data test or unit test that did not pass, with dbt's message."""

    node: str
    resource_type: str
    status: str
    message: str


@dataclass
class ModelsResult:
    """What a build did: `failures` holds models and tests that errored or failed; nodes
    skipped because of them are only counted in `skipped`."""

    ok: bool
    models_built: int = 0
    tests_passed: int = 0
    tests_failed: int = 0
    tests_warned: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[NodeFailure] = field(default_factory=list)
    error: str | None = None
    reused_from: str | None = None
    """Set when nothing was built because the marts are current: when they were built (UTC)."""
    scope: str = "full"
    """"full" (every model), "changed" (those downstream of `changed_tables`) or "none"."""
    reason: str | None = None
    """Why this scope (`build_plan.BuildPlan.reason`), when a plan decided it."""
    changed_tables: tuple[str, ...] = ()
    built: list[str] = field(default_factory=list)
    """The models built, by name, as dbt's run results list them."""


@contextmanager
def dbt_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set env vars for the duration of one dbt call and restore them afterwards (for dbt in a
    subprocess: while the process is started, which copies the environment)."""
    with _ENV_LOCK:
        saved = {key: os.environ.get(key) for key in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def dbt_args(
    command: str,
    target_path: pathlib.Path,
    dbt_vars: Mapping[str, Any] | None = None,
    *,
    log_path: pathlib.Path | None = None,
) -> list[str]:
    """The dbt command line for our project; target and logs stay out of `models/`. dbt logs
    nothing to the console: the caller reports its result in its own lines."""
    args = [
        command,
        "--project-dir",
        str(PROJECT_DIR),
        "--profiles-dir",
        str(PROJECT_DIR),
        "--target-path",
        str(target_path),
        "--log-path",
        str(log_path if log_path is not None else target_path / "logs"),
        "--no-version-check",
        "--no-send-anonymous-usage-stats",
        "--no-use-colors",
        "--log-level",
        "none",
    ]
    if dbt_vars:
        args += ["--vars", json.dumps(dict(dbt_vars))]
    return args


def _summarise(
    result: Any, ok: bool, started: float, notes: Mapping[str, str] | None = None
) -> ModelsResult:
    """Count models and tests from dbt's run results and keep every failure's message, with
    what `notes` adds to it (the columns a failed not-null check found null)."""
    summary = ModelsResult(ok=ok, seconds=time.perf_counter() - started)
    if result is None or not hasattr(result, "results"):
        return summary
    for node_result in result.results:
        node = node_result.node
        status = str(getattr(node_result.status, "value", node_result.status))
        resource_type = str(getattr(node.resource_type, "value", node.resource_type))
        if status == "skipped":
            summary.skipped += 1
            continue
        if resource_type in ("test", "unit_test"):
            if status == "pass":
                summary.tests_passed += 1
            elif status == "warn":
                summary.tests_warned += 1
            else:
                summary.tests_failed += 1
        elif resource_type == "model" and status == "success":
            summary.models_built += 1
            summary.built.append(node.name)
        if status in ("error", "fail"):
            message = str(node_result.message or status)
            if notes and node.unique_id in notes:
                message = f"{message}: {notes[node.unique_id]}"
            summary.failures.append(
                NodeFailure(
                    node=node.unique_id,
                    resource_type=resource_type,
                    status=status,
                    message=message,
                )
            )
    summary.ok = ok and not summary.failures
    return summary


@dataclass(frozen=True)
class DbtTarget:
    """Which output of models/profiles.yml dbt builds in, and the values it reads from the
    environment for that one call."""

    name: str
    env: Mapping[str, str]
    database_file: pathlib.Path | None = None

    @classmethod
    def duckdb(cls, database_path: pathlib.Path) -> DbtTarget:
        path = pathlib.Path(database_path).resolve()
        return cls("duckdb", {PATH_ENV: str(path)}, path)

    @classmethod
    def postgres(
        cls, *, host: str, port: int, user: str, password: str, database: str, sslmode: str
    ) -> DbtTarget:
        return cls(
            "postgres",
            {
                "DRONE_SYNC_PG_HOST": host,
                "DRONE_SYNC_PG_PORT": str(port),
                "DRONE_SYNC_PG_USER": user,
                "DBT_ENV_SECRET_DRONE_SYNC_PG_PASSWORD": password,
                "DRONE_SYNC_PG_DATABASE": database,
                "DRONE_SYNC_PG_SSLMODE": sslmode,
            },
        )


def profile_env(target: DbtTarget, dataset: str) -> dict[str, str]:
    """What models/profiles.yml reads from the environment for one build on `target`."""
    return {**target.env, DATASET_ENV: dataset}


def build_models(
    warehouse: pathlib.Path | DbtTarget,
    dataset: str = "drone_ops",
    *,
    run_tests: bool = True,
    target_path: pathlib.Path | None = None,
    dbt_vars: dict[str, Any] | None = None,
    select: str | Sequence[str] | None = None,
    unit_tests: bool = True,
    write_json: bool = True,
    scratch_root: pathlib.Path | None = None,
    manifest: Any | None = None,
) -> ModelsResult:
    """Build staging views and marts (`dbt build`, or `dbt run` without tests) in-process.

    `select`: dbt selectors, to build part of the project. `unit_tests=False` leaves dbt's unit
    tests out (`build_plan.py`). `write_json=False` skips `manifest.json` and
    `run_results.json` (their cost: docs/performance.md); the result says what ran either way.
    dbt's target folder is `target_path` when given, kept between builds for partial parsing;
    otherwise, and for dbt's logs always, a temporary folder in `scratch_root`. `manifest`:
    the project as `parse_project` parsed it, so dbt skips parsing (`dbtRunner(manifest=)`).
    """
    from dbt.cli.main import dbtRunner

    started = time.perf_counter()
    target = warehouse if isinstance(warehouse, DbtTarget) else DbtTarget.duckdb(warehouse)
    if target.database_file is not None and not target.database_file.is_file():
        # dbt-duckdb would create an empty file and fail on every source: say what is wrong
        return ModelsResult(
            ok=False, error=f"no DuckDB file at {target.database_file}: run a sync first"
        )
    if scratch_root is not None:
        scratch_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=scratch_root) as scratch:
        folder = pathlib.Path(target_path) if target_path is not None else pathlib.Path(scratch)
        # dbt's debug log would go to the scratch folder removed below: not writing it saves
        # the formatting of every event (docs/performance.md)
        options = ["--target", target.name, "--log-level-file", "none"]
        log_path = pathlib.Path(scratch) / "logs"
        command = "build" if run_tests else "run"
        args = [*dbt_args(command, folder, dbt_vars, log_path=log_path), *options]
        if select:
            args += ["--select", *([select] if isinstance(select, str) else select)]
        if run_tests and not unit_tests:
            args += ["--exclude-resource-type", "unit_test"]
        if not write_json:
            args.append("--no-write-json")
        with dbt_environment(profile_env(target, dataset)):
            try:
                outcome = dbtRunner(manifest=manifest).invoke(args)
                show = [*dbt_args("show", folder, dbt_vars, log_path=log_path), *options]
                notes = broken_checks(dbtRunner(), show, failed_check_tests(outcome.result))
            finally:
                if target.name == "duckdb":
                    release_dbt_duckdb()
    summary = _summarise(outcome.result, outcome.success, started, notes)
    if outcome.exception is not None:
        summary.ok = False
        summary.error = f"{type(outcome.exception).__name__}: {outcome.exception}"
    return summary


def parse_project(
    warehouse: DbtTarget, dataset: str, target_path: pathlib.Path, dbt_vars: dict[str, Any]
) -> Any | None:
    """dbt's parse of the project for builds on `warehouse` with `dbt_vars` (its manifest), or
    None when it does not parse. Why: a long-lived process (the marts follower) passes it to
    each `build_models` and so pays dbt's parse once, not at every build; it stays valid while
    the project's files, the vars and the profile's values do, which the caller keys it by."""
    from dbt.cli.main import dbtRunner

    args = [*dbt_args("parse", target_path, dbt_vars), "--target", warehouse.name]
    with dbt_environment(profile_env(warehouse, dataset)):
        outcome = dbtRunner().invoke([*args, "--log-level-file", "none", "--no-write-json"])
    return outcome.result if outcome.success else None


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
