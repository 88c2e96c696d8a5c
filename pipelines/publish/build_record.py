"""The record of the last model build, so a run that changed nothing skips the build.

Why: a schedule every 15 minutes on a quiet workspace would otherwise rebuild and retest every
model each time (about 8 s at `small`, 15 s at `large`) to produce the same marts. The record
says what the marts were built from; a run skips the build only when all of it still holds:

- the warehouse's data version is the one the build read (`warehouse.data_version`: row counts,
  retirements and the newest load per raw table, so any load, retirement or repair changes it,
  whoever made it: this run, a `--no-models` run, a restore from a backup);
- the dbt project's files are the ones the build used (an upgrade or an edited model rebuilds);
- the build ran on the same UTC day: marts that measure "until now" (how long a project has
  been weather-delayed) are refreshed at least once a day;
- the build was a whole `dbt build` whose models and tests all passed.

The record lives in the warehouse's dbt folder (in the sync folder beside dlt's pipelines
folder, `Target.sync_dir()`), with dbt's own partial-parse state, and is removed before each
build starts, so a build that fails or is killed leaves no record and the next run builds
again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from .dbt_build import PROJECT_DIR

log = logging.getLogger(__name__)

RECORD_NAME = "last_build.json"
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

    def built_on_day(self, now: datetime) -> bool:
        return datetime.fromisoformat(self.built_at).date() == now.astimezone(UTC).date()


def project_fingerprint(project_dir: Path = PROJECT_DIR) -> str:
    """A hash of the dbt project's files (models, macros, tests, project and profiles)."""
    digest = hashlib.sha256()
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
    """The warehouse's dbt folder: partial-parse state and the build record. It lives in the
    sync folder, not in dlt's pipelines folder, where dlt's tooling would list it as a
    pipeline."""
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


def current_build(
    folder: Path, data_version: str | None, dataset: str, now: datetime | None = None
) -> BuildRecord | None:
    """The last build's record when the marts it made are still current, else None."""
    if data_version is None:
        return None
    record = read_record(folder)
    if record is None:
        return None
    current = (
        record.data_version == data_version
        and record.dataset == dataset
        and record.project == project_fingerprint()
        and record.built_on_day(now or datetime.now(UTC))
    )
    return record if current else None


def forget_build(folder: Path) -> None:
    """Removes the record before a build starts: until that build passes, nothing is current."""
    (folder / RECORD_NAME).unlink(missing_ok=True)


def remember_build(folder: Path, data_version: str | None, dataset: str) -> None:
    """Records a whole build whose models and tests all passed."""
    if data_version is None:
        return
    record = BuildRecord(
        data_version=data_version,
        project=project_fingerprint(),
        dataset=dataset,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
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
    path = folder / RECORD_NAME
    partial = path.with_name(f"{RECORD_NAME}.tmp-{os.getpid()}")
    partial.write_text(json.dumps(asdict(record), indent=2) + "\n")
    os.replace(partial, path)
