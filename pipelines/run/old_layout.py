"""What an older drone-sync left where this one no longer looks, moved or removed under the
warehouse's lock before the run opens its pipeline.

Older versions named every warehouse's dlt pipeline `drone_ops` and kept their `dbt` and
`spill` folders inside the pipelines folder, beside dlt's working folder. dlt's tooling then
showed whichever warehouse was synced last and listed `dbt` and `spill` as pipelines. Now the
pipeline is named per warehouse (`Target.pipeline_name`) and the sync's own folders live in
`Target.sync_dir()`; this module carries a warehouse over without losing what it had:

- the working folder under the old name becomes the new pipeline's (its pending packages,
  schemas and state kept; only the name inside its state is changed, because dlt refuses a
  folder whose state names another pipeline); so does the folder of a DuckDB file that was
  moved with its `.dlt_pipelines` folder (its path, and so its name, changed);
- the old dbt folder (the build record, dbt's partial-parse state) moves to the sync folder;
- the old spill folder held only what killed runs left, so it is removed.

A warehouse that only has the old name in its destination (a new machine) needs nothing
here: the sync re-derives every change by comparing with the warehouse itself.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from dlt.common.versioned_state import json_decode_state, json_encode_state

from drone_ops_sync.sources.drone_ops import DEFAULT_WORKSPACE

from .target import OLD_PIPELINE_NAME, PIPELINE_HASH_LENGTH, PIPELINE_PREFIX, Target

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
OLD_SYNC_FOLDERS = ("dbt", "spill")


def carry_over(target: Target) -> list[str]:
    """Everything an older drone-sync left for this warehouse, carried over; called under the
    warehouse's lock before anything opens the pipeline (a pipeline opened first would create
    an empty working folder under the new name, and the old one would no longer be adopted).
    Returns notes for the run's summary. Only the default workspace can have an older
    layout: named workspaces came after it, and must never adopt the default's folders."""
    if target.workspace != DEFAULT_WORKSPACE:
        return []
    adopted = adopt_old_working_folder(target)
    return ([adopted] if adopted else []) + move_old_sync_folders(target)


def adopt_old_working_folder(target: Target) -> str | None:
    """Renames an earlier working folder of this warehouse to its pipeline's name when the
    new one does not exist yet; returns a note saying so."""
    new = target.working_dir()
    if new.exists():
        return None
    old = _earlier_working_folder(target)
    if old is None:
        return None
    name = target.pipeline_name()
    state_path = old / STATE_FILE
    try:
        state = json_decode_state(state_path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("left the earlier working folder %s alone: %s", old, exc)
        return None
    state["pipeline_name"] = name
    staged = state_path.with_name(STATE_FILE + ".renaming")
    staged.write_text(json_encode_state(state))  # type: ignore[arg-type]
    staged.replace(state_path)
    old.rename(new)
    log.info("adopted the earlier working folder %s as %s", old, new)
    return f"dlt's working folder {old} is now {new.name} (one pipeline name per warehouse)"


def _earlier_working_folder(target: Target) -> Path | None:
    """The working folder this warehouse had before: under the old name `drone_ops`, or (a
    DuckDB file moved or restored elsewhere with its `.dlt_pipelines` folder, which changes
    its name) under the name of its old path. Either only when it loaded the same dataset:
    the old name served every dataset of a file."""
    pipelines_dir = target.resolved_pipelines_dir()
    candidates = [pipelines_dir / OLD_PIPELINE_NAME]
    if target.destination == "duckdb":
        pattern = f"{PIPELINE_PREFIX}_{target.dataset}_" + "?" * PIPELINE_HASH_LENGTH
        candidates += sorted(pipelines_dir.glob(pattern))
    for folder in candidates:
        if folder.is_dir() and _dataset_of(folder) == target.dataset:
            return folder
    return None


def _dataset_of(folder: Path) -> str | None:
    try:
        return str(json_decode_state((folder / STATE_FILE).read_text()).get("dataset_name"))
    except (OSError, ValueError):
        return None


def move_old_sync_folders(target: Target) -> list[str]:
    """Moves the `dbt` folder out of dlt's pipelines folder into the sync folder and removes
    the old `spill` folder; returns what it moved or removed."""
    pipelines_dir = target.resolved_pipelines_dir()
    sync_dir = target.sync_dir()
    done: list[str] = []
    for name in OLD_SYNC_FOLDERS:
        old = pipelines_dir / name
        if not old.is_dir() or (old / STATE_FILE).is_file():
            # a folder with a state file is a pipeline somebody named `dbt` or `spill`
            continue
        new = sync_dir / name
        if name == "dbt" and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(old), str(new))
            done.append(f"moved {old} to {new}")
        else:
            shutil.rmtree(old, ignore_errors=True)
            done.append(f"removed {old}")
    return done


def old_link_target(target: Target) -> Path:
    """Where an older sync's machine-wide `drone_ops` link pointed for this warehouse."""
    return target.resolved_pipelines_dir() / OLD_PIPELINE_NAME
