"""What a crashed or killed run left behind, dealt with under the lock before a new run starts:
data it extracted but never loaded, half-moved load packages, spill and dbt scratch folders."""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import dlt
from dlt.common.schema.exceptions import SchemaException
from dlt.common.storages.exceptions import InStorageSchemaModified
from dlt.pipeline.exceptions import CannotRestorePipelineException

from drone_ops_sync.sources.drone_ops.internal import SPILL_PREFIX

from .destination import make_pipeline
from .errors import innermost, is_disk_full, root_cause
from .target import PIPELINE_HASH_LENGTH, PIPELINE_PREFIX, Target

log = logging.getLogger(__name__)

DAMAGED_SUFFIX = ".damaged"
"""dlt's working folder is set aside under its own name plus this when it cannot be read."""
LOCAL_STATE_ERRORS = (SchemaException, InStorageSchemaModified, CannotRestorePipelineException)
PENDING_QUEUES = ("normalize/extracted", "load/normalized", "load/new")
"""dlt's queues of packages not yet loaded, in its working folder."""


SCRATCH_PREFIX = "drone-ops-dbt-"
"""Prefix of the dbt build's scratch folders beside the pipeline (removed when a killed run
left them)."""


def forget_moved_working_folders(target: Target) -> list[str]:
    """Removes the working folders a DuckDB file brought from an earlier path; returns notes.

    Why: the pipeline is named after the file's path, so a file moved with its
    `.dlt_pipelines/<file>/` folder finds its old working folder under another name, a stale
    cache dlt's tooling would list as a second pipeline; the run starts from the warehouse.
    Only in the per-file folder: a given pipelines folder may hold other warehouses'."""
    if target.destination != "duckdb" or target.pipelines_dir is not None:
        return []
    current = target.working_dir()
    pattern = f"{PIPELINE_PREFIX}_{target.dataset}_" + "?" * PIPELINE_HASH_LENGTH
    notes = []
    for folder in sorted(target.resolved_pipelines_dir().glob(pattern)):
        if folder != current and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            notes.append(
                f"removed dlt's working folder {folder.name}, which this file brought from an"
                " earlier path; the run started from the warehouse"
            )
    return notes


def open_pipeline(target: Target) -> tuple[dlt.Pipeline, str | None]:
    """The pipeline, and a note if its local working folder had to be set aside.

    Why: dlt's working folder is a cache of what the warehouse holds, and a run interrupted at
    the wrong moment can leave a schema file dlt refuses to read, failing every later run. A
    folder dlt cannot read is moved aside (one copy, for a post-mortem) and the run starts
    from the warehouse, as on a new machine."""
    working = target.working_dir()
    try:
        return make_pipeline(target), None
    except LOCAL_STATE_ERRORS as exc:
        if not working.is_dir():
            raise
        cause = root_cause(exc)
    aside = working.with_name(working.name + DAMAGED_SUFFIX)
    shutil.rmtree(aside, ignore_errors=True)
    working.rename(aside)
    log.warning("set aside dlt's unreadable working folder %s: %s", working, cause)
    note = (
        f"set aside dlt's working folder, which an interrupted run left unreadable ({cause}),"
        f" as {aside.name}; the run started from the warehouse"
    )
    return make_pipeline(target), note


def finish_pending(pipeline: dlt.Pipeline) -> str | None:
    """Loads what an interrupted run extracted; drops it if it cannot be loaded (the next
    comparison re-derives every change anyway), by hand when a kill mid-move defeats dlt's
    own abort, so one damaged package never wedges every later run. The note says this in
    words; the error itself (paths, errno) goes to the DEBUG log only."""
    if not pipeline.has_pending_data:
        return None
    working = Path(pipeline.working_dir)
    packages = len(_pending_load_ids(working))
    try:
        pipeline.normalize()
        pipeline.load()
        return "loaded the data an interrupted run had left pending"
    except Exception as exc:
        log.debug("pending data of an interrupted run could not be finished: %s", root_cause(exc))
        why = _why_unfinished(exc)
    try:
        pipeline.abort_packages()
    except Exception:
        _remove_entries(working, PENDING_QUEUES)
    # a normalize that failed half-way leaves its output in load/new, which no abort removes
    _remove_entries(working, ("load/new",))
    found = "1 load package" if packages == 1 else f"{packages} load packages"
    it, its = ("it", "its") if packages == 1 else ("them", "their")
    note = (
        f"found {found} an interrupted run left unloaded, which could not be finished ({why});"
        f" dropped {it}: this run re-derives {its} changes by comparing the API with the"
        " warehouse, so nothing is lost"
    )
    log.warning("%s", note)
    return note


def _pending_load_ids(working_dir: Path) -> set[str]:
    """The load ids of packages in dlt's queues of work not yet loaded."""
    return {
        package.name
        for queue in PENDING_QUEUES
        if (working_dir / queue).is_dir()
        for package in (working_dir / queue).iterdir()
    }


def _why_unfinished(error: BaseException) -> str:
    """Why a pending package could not be finished, in words (the error itself is logged at
    DEBUG: its paths and errno say nothing an operator can act on)."""
    if is_disk_full(error):
        return "the disk is full"
    if isinstance(innermost(error), OSError):
        return "its files were left half-moved between dlt's folders"
    return "dlt could not normalize or load what it holds"


def _remove_entries(
    working_dir: Path, folders: Sequence[str], only: re.Pattern[str] | None = None
) -> list[str]:
    """Removes every file and folder in each of `folders` of dlt's working folder (with
    `only`, those whose name it matches); returns what it removed."""
    removed: list[str] = []
    for name in folders:
        folder = working_dir / name
        for entry in folder.iterdir() if folder.is_dir() else ():
            if only is not None and not only.fullmatch(entry.name):
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(f"{name}/{entry.name}")
    return removed


def remove_leftovers(target: Target, pipeline: dlt.Pipeline) -> list[str]:
    """Removes what killed runs left, under the lock: spill and dbt scratch folders, packages
    half-moved into dlt's `load/new` (never loaded: this run re-derives their changes), and
    dlt's unfinished saves (`remove_unfinished_saves`)."""
    removed: list[str] = []
    spill_root = target.spill_root()
    if spill_root.is_dir():
        for prefix in (SPILL_PREFIX, SCRATCH_PREFIX):
            for leftover in spill_root.glob(f"{prefix}*"):
                shutil.rmtree(leftover, ignore_errors=True)
                removed.append(leftover.name)
    working = Path(pipeline.working_dir)
    remove_unfinished_saves(working)
    return removed + _remove_entries(working, ("load/new",))


def drop_unloaded(pipeline: dlt.Pipeline) -> None:
    """Deletes every package not yet loaded and dlt's unfinished saves without dlt's abort,
    which writes (after a full disk nothing may); the next run re-derives their changes."""
    working = Path(pipeline.working_dir)
    _remove_entries(working, PENDING_QUEUES)
    remove_unfinished_saves(working)


UNFINISHED_SAVE = re.compile(r"[0-9a-f]{16}|[0-9a-f]{32}")
"""dlt writes a file (or a package's folder) under a random hex name beside it, then renames it
(`FileStorage.save_atomic`, `move_atomic_to_file`); a write the disk refused leaves it behind."""


def remove_unfinished_saves(working_dir: Path) -> None:
    """Removes the temporary files and package folders of dlt's saves that never finished,
    in the working folder, its schema folder and its queues' roots (packages in the queues go
    whole, `PENDING_QUEUES`)."""
    _remove_entries(working_dir, ("", "schemas", "normalize", "load"), UNFINISHED_SAVE)
