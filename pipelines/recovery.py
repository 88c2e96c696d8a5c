"""What a crashed or killed run left behind, dealt with under the lock before a new run starts:
data it extracted but never loaded, half-moved load packages, spill and dbt scratch folders."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

import dlt

from sources.drone_ops.spill import SPILL_PREFIX

from .errors import root_cause
from .models import SCRATCH_PREFIX
from .target import Target

log = logging.getLogger(__name__)


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
        cause = root_cause(exc)
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
