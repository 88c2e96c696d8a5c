"""Completed load packages: dlt keeps every one it loaded, so the newest few are kept and the
rest removed at the end of each run.

Why: dlt never removes a loaded package, and a schedule makes a few every few minutes. The
warehouse keeps what they loaded, so local copies only serve `dlt pipeline <name>
load-package` or `info`: the newest `KEEP_LOADED_PACKAGES` are kept for that, older ones are
removed with dlt's own `LoadStorage.delete_loaded_package`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from typing import Final

import dlt
from dlt.common.storages import LoadStorage, LoadStorageConfiguration

log = logging.getLogger(__name__)

KEEP_LOADED_PACKAGES: Final = 6
"""Completed packages kept: a few runs' worth (a run with changes makes one per load group
that changed, a quiet run none), so `dlt pipeline <name> load-package` still shows the last
run's loads."""


def prune_loaded_packages(
    pipeline: dlt.Pipeline,
    traced: Collection[str],
) -> None:
    """Removes every completed package but the newest `KEEP_LOADED_PACKAGES` and those the
    run's saved trace names (`traced`, which must stay openable). Called under the lock at the
    end of a run; a package that cannot be removed is left for the next run: pruning never
    fails a run whose data is already in the warehouse."""
    storage = LoadStorage(
        False,
        [],
        LoadStorageConfiguration(load_volume_path=os.path.join(pipeline.working_dir, "load")),
    )
    # load ids are creation times, so their order is the order dlt made the packages in
    completed = sorted(pipeline.list_completed_load_packages(), key=_created)
    for load_id in completed[: max(0, len(completed) - KEEP_LOADED_PACKAGES)]:
        if load_id in traced:
            continue
        try:
            storage.delete_loaded_package(load_id)
        except OSError as exc:
            log.warning("could not remove the completed load package %s: %s", load_id, exc)


def _created(load_id: str) -> tuple[float, str]:
    """A load id's creation time (dlt makes it from the clock), its text as the tie-break."""
    try:
        return float(load_id), load_id
    except ValueError:
        return float("inf"), load_id
