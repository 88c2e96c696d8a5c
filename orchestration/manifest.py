"""The dbt project for dagster-dbt, and its manifest, prepared when the definitions load.

dagster-dbt builds the model assets from `manifest.json`, so `dbt parse` makes it here when it
is missing or older than the project's files (the build record's fingerprint), so a fresh
clone, an edited model and a deployment all load without a manual step.

Why a per-user cache folder (`~/.cache/drone-ops-sync/dagster-manifest/<project>/`) and not
`models/target/`: installed from a wheel the project is package data, never a place to write
into (docs/install.md); named after the project's path, so two checkouts keep their own, and
apart from other builds, so none overwrites a manifest another reads. Parsing connects to no
database, so a placeholder path stands in for the warehouse.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from dagster_dbt import DbtProject

from drone_ops_sync.pipelines.defaults import DEFAULT_DATASET
from drone_ops_sync.pipelines.publish.build_record import project_fingerprint
from drone_ops_sync.pipelines.publish.dbt_build import (
    PROJECT_DIR,
    DbtTarget,
    dbt_args,
    dbt_environment,
    profile_env,
)
from drone_ops_sync.pipelines.run.lock import waited_lock

CACHE_FOLDER = Path("drone-ops-sync") / "dagster-manifest"
"""Below the user's cache folder: where each project's manifest folder is."""
FINGERPRINT_FILE = "project_fingerprint"
PREPARE_WAIT_SECONDS = 300.0
"""Several processes may load the definitions at once (the runs a tick starts, the webserver,
the daemon); the first parses, the others wait this long at most."""


class ManifestError(RuntimeError):
    """`dbt parse` failed: the code location cannot load its dbt assets."""


def manifest_folder() -> Path:
    """dbt's target folder for the manifest dagster-dbt reads, outside the project: the user's
    cache folder, else the user's own in the temporary folder (an account without a home)."""
    project = hashlib.sha256(str(PROJECT_DIR.resolve()).encode()).hexdigest()[:12]
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(cache) / CACHE_FOLDER / project
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.gettempdir()) / f"drone-ops-sync-{os.getuid()}" / project
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def dbt_project() -> DbtProject:
    """The dbt project (package data), its manifest in `manifest_folder()`."""
    return DbtProject(
        project_dir=PROJECT_DIR, profiles_dir=PROJECT_DIR, target_path=manifest_folder()
    )


def prepared_project() -> DbtProject:
    """The dbt project with a manifest of its current files, parsed now if needed."""
    project = dbt_project()
    folder = project.target_path  # made by manifest_folder, outside the project
    fingerprint = project_fingerprint(project.project_dir)
    if _current(project, folder, fingerprint):
        return project
    with waited_lock(folder / "prepare.lock", PREPARE_WAIT_SECONDS, "the dbt manifest"):
        if not _current(project, folder, fingerprint):
            _parse(folder)
            (folder / FINGERPRINT_FILE).write_text(fingerprint, encoding="utf-8")
    return project


def _current(project: DbtProject, folder: Path, fingerprint: str) -> bool:
    stamp = folder / FINGERPRINT_FILE
    return (
        project.manifest_path.is_file()
        and stamp.is_file()
        and stamp.read_text(encoding="utf-8") == fingerprint
    )


def _parse(folder: Path) -> None:
    """`dbt parse` in-process, with the profile's environment for the DuckDB output."""
    from dbt.cli.main import dbtRunner

    placeholder = DbtTarget.duckdb(folder / "parse-only.duckdb")
    args = [*dbt_args("parse", folder, log_path=folder / "logs"), "--target", placeholder.name]
    with dbt_environment(profile_env(placeholder, DEFAULT_DATASET)):
        outcome = dbtRunner().invoke(args)
    if not outcome.success:
        cause = outcome.exception or "see the dbt log in " + str(folder / "logs")
        raise ManifestError(f"dbt parse of {PROJECT_DIR} failed: {cause}")
