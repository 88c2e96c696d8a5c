"""What the next model build does: nothing, the models downstream of the raw tables that
changed, or every model (`plan_build`).

Why: a run that loaded new jobs has to refresh what reads jobs, not the webhook marts. The plan
selects `source:drone_ops.<table>+` for each table whose data version differs from the one the
last passing build read (`build_record.py`), which also covers what others loaded since.

A full build runs when anything but the data may have changed or is unknown: the first build,
the build after one that left no record, an edited dbt project or upgraded dbt/DuckDB
(`project_fingerprint`), another dataset, an incomparable data version, the first build of a
UTC day (the status histories measure "until now"), and whenever asked. The dbt unit tests
check the SQL on fixed inputs, so only the project or the engine can change their outcome: they
run when asked, after a project or engine change, and after a build that did not pass (one of
them may be what failed), but not in a warehouse's first build: dbt recommends leaving them out
of production builds, and our CI runs them on every change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from .build_record import DBT_TARGET, BuildRecord, project_fingerprint, read_record

SOURCE = "drone_ops"
"""The dbt source declaring every raw table the models read (staging/_drone_ops__sources.yml)."""

Scope = Literal["none", "changed", "full"]


@dataclass(frozen=True)
class BuildPlan:
    """The next build: its scope, why, and for a partial build the tables that changed."""

    scope: Scope
    reason: str
    changed_tables: tuple[str, ...] = ()
    unit_tests: bool = False
    previous: BuildRecord | None = None
    """The record the plan was made from (its full build stays the last after a partial one)."""

    @property
    def select(self) -> tuple[str, ...]:
        """dbt's selectors for a partial build: each changed table's source and all below it."""
        return tuple(f"source:{SOURCE}.{table}+" for table in self.changed_tables)


def plan_build(
    folder: Path,
    data_version: str | None,
    dataset: str,
    *,
    full: bool = False,
    now: datetime | None = None,
) -> BuildPlan:
    """Decides from the record in `folder` what a build of `dataset` at `data_version` does."""
    record = read_record(folder)
    if full:
        return BuildPlan("full", "asked for", unit_tests=True, previous=record)
    if record is None:
        # dbt's target folder is there once any build has started: this one follows a failure
        tried = (folder / DBT_TARGET).is_dir()
        return BuildPlan("full", "no passing build recorded", unit_tests=tried)
    if record.dataset != dataset:
        return BuildPlan("full", "the last build was of another dataset")
    if record.project != project_fingerprint():
        return BuildPlan("full", "the dbt project or its engine changed", unit_tests=True)
    if data_version is None:
        return BuildPlan("full", "the warehouse's data version is unknown", previous=record)
    if not record.fully_built_on_day(now or datetime.now(UTC)):
        return BuildPlan("full", "the first build of the day", previous=record)
    changed = changed_tables(record.data_version, data_version)
    if changed is None:
        return BuildPlan("full", "the data versions cannot be compared", previous=record)
    if not changed:
        reason = f"no data changed since the build at {record.built_at}"
        return BuildPlan("none", reason, previous=record)
    return BuildPlan(
        "changed", f"changed: {', '.join(changed)}", changed_tables=changed, previous=record
    )


def table_versions(data_version: str) -> dict[str, str] | None:
    """A data version as {table: version}, or {"<workspace>/<table>": version} for a fleet's
    (`name=<version>;...`, cli `_fleet_data_version`); None when it has neither form."""
    try:
        if data_version.startswith("{"):
            return _versions(json.loads(data_version), "")
        versions: dict[str, str] = {}
        for part in data_version.split(";"):
            name, equals, version = part.partition("=")
            if not equals:
                return None
            versions.update(_versions(json.loads(version), f"{name}/"))
        return versions
    except (ValueError, TypeError):
        return None


def _versions(parsed: object, prefix: str) -> dict[str, str]:
    if not isinstance(parsed, dict):
        raise TypeError("a data version is a JSON object")
    return {f"{prefix}{table}": str(version) for table, version in parsed.items()}


def changed_tables(before: str, after: str) -> tuple[str, ...] | None:
    """The raw tables whose version differs between two data versions, in any workspace (a
    workspace added or removed changes all its tables); None when either cannot be read."""
    old, new = table_versions(before), table_versions(after)
    if old is None or new is None:
        return None
    keys = {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}
    return tuple(sorted({key.rpartition("/")[2] for key in keys}))
