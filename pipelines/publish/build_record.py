"""The record of the last model build: what the marts were built from, so the next build does
only what changed since (`build_plan.py` decides from it).

Why: a schedule would otherwise rebuild and retest every model each time, whatever the run
loaded. The record holds the data version per raw table (`warehouse.data_version`, which any
load, retirement, repair or restore changes, whoever made it), the dbt project's fingerprint,
the dataset, and when the last build and the last full build ran. Only a build whose models
and tests all passed writes one, in the warehouse's dbt folder (`Target.sync_dir()`), and it is
removed before each build starts, so a build that fails or is killed leaves none.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from ..run.durable import replace_durably
from .dbt_build import PROJECT_DIR

log = logging.getLogger(__name__)

RECORD_NAME = "last_build.json"
DBT_TARGET = "target"
"""dbt's target folder (partial-parse state) in the dbt folder."""
# what makes the dbt project; dbt's own output folders are not part of it
PROJECT_FOLDERS = ("staging", "intermediate", "marts", "macros", "tests")
PROJECT_FILES = ("dbt_project.yml", "profiles.yml")


@dataclass(frozen=True)
class BuildRecord:
    """What the current marts were built from."""

    data_version: str
    project: str
    dataset: str
    built_at: str
    """UTC, ISO 8601."""
    snapshot: str | None = None
    """The marts-only BI snapshot published from this build, if any."""
    full_built_at: str | None = None
    """When the last build of every model ran (UTC, ISO 8601): the marts that measure "until
    now" are rebuilt at least once a UTC day whatever changed. None: not known, so the next
    build is a full one."""

    def fully_built_on_day(self, now: datetime) -> bool:
        """Whether the last full build ran on `now`'s UTC day."""
        if self.full_built_at is None:
            return False
        built = datetime.fromisoformat(self.full_built_at)
        return built.date() == now.astimezone(UTC).date()


ENGINE_PACKAGES = ("dbt-core", "dbt-duckdb", "dbt-postgres", "duckdb")


def engine_versions() -> str:
    """The installed versions of what runs the models: an upgrade can change what the same SQL
    does, so it counts as a project change (a full build with the unit tests)."""
    found = []
    for name in ENGINE_PACKAGES:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


def project_fingerprint(project_dir: Path = PROJECT_DIR) -> str:
    """A hash of the dbt project's files (models, macros, tests, project and profiles) and of
    the versions of dbt and DuckDB installed (`engine_versions`)."""
    digest = hashlib.sha256(engine_versions().encode())
    paths = [project_dir / name for name in PROJECT_FILES]
    for folder in PROJECT_FOLDERS:
        paths += sorted(p for p in (project_dir / folder).rglob("*") if p.is_file())
    for path in paths:
        if not path.is_file():
            continue
        digest.update(path.relative_to(project_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def dbt_folder(sync_dir: Path) -> Path:
    """The warehouse's dbt folder (partial-parse state, the build record), in the sync folder:
    dlt's tooling would list it as a pipeline in dlt's."""
    return sync_dir / "dbt"


def read_record(folder: Path) -> BuildRecord | None:
    """The record, or None when there is none or it cannot be read (then the models build)."""
    path = folder / RECORD_NAME
    try:
        return BuildRecord(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        log.info("model build record %s unreadable (%s): the models will be built", path, exc)
        return None


def forget_build(folder: Path) -> None:
    """Removes the record before a build starts: until that build passes, nothing is current."""
    (folder / RECORD_NAME).unlink(missing_ok=True)


def remember_build(
    folder: Path,
    data_version: str | None,
    dataset: str,
    *,
    full: bool,
    previous: BuildRecord | None = None,
    now: datetime | None = None,
) -> None:
    """Records a build whose models and tests all passed: `full`, or downstream of what changed
    since `previous` (whose full build then stays the last one)."""
    if data_version is None:
        return
    built_at = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    full_built_at = built_at if full else (previous.full_built_at if previous else None)
    record = BuildRecord(
        data_version=data_version,
        project=project_fingerprint(),
        dataset=dataset,
        built_at=built_at,
        full_built_at=full_built_at,
    )
    _write(folder, record)


def remember_snapshot(folder: Path, snapshot: Path) -> None:
    """Notes that the marts-only snapshot at `snapshot` was published from the recorded build."""
    record = read_record(folder)
    if record is not None:
        _write(folder, replace(record, snapshot=str(snapshot.resolve())))


def snapshot_current(record: BuildRecord, snapshot: Path) -> bool:
    """Whether the marts-only snapshot at `snapshot` was published from this build."""
    return record.snapshot == str(snapshot.resolve()) and snapshot.is_file()


def _write(folder: Path, record: BuildRecord) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    replace_durably(folder / RECORD_NAME, json.dumps(asdict(record), indent=2) + "\n")
