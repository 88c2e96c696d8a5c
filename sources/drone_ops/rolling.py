"""The rolling job refresh: with `job_refresh_slices = N > 1`, a run walks the jobs of new and
changed projects plus one N-th of the others, so each project's jobs are walked at least every
N runs. Only what was walked can be compared, so only that can be found changed or gone.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from .run import KnownState

JobSlice = tuple[int, int]
"""(slice, slices): this run walks the projects whose slice number is `slice`."""


def job_slice(slices: int, known: KnownState) -> JobSlice | None:
    """This run's slice, or None for a walk of every project's jobs (no rolling refresh, no
    jobs table yet, or a full refresh)."""
    if slices == 1 or known.job_syncs is None or "jobs" not in known.existing:
        return None
    return known.job_syncs % slices, slices


def job_slice_of(project_id: str, slices: int) -> int:
    """The slice a project's jobs belong to: stable across runs, processes and machines (a
    checksum of the id, not Python's salted `hash`), so each slice is walked in turn."""
    return zlib.crc32(project_id.encode()) % slices


def outside_projects(current: pa.Table, skipped_project_ids: Iterable[str]) -> pa.Table:
    """Current job rows except those of projects whose jobs this run did not walk."""
    skipped = pa.array(list(skipped_project_ids), pa.string())
    if len(skipped) == 0:
        return current
    under_skipped = pc.is_in(current.column("project_id"), value_set=skipped)
    return current.filter(pc.invert(pc.fill_null(under_skipped, False)))


def rolling_scope(chosen: JobSlice, walked: int, skipped: int) -> str:
    """How `_sync_runs.scope` describes a rolling run's jobs comparison."""
    return (
        f"rolling refresh, slice {chosen[0] + 1} of {chosen[1]}:"
        f" jobs of {walked:,} of {walked + skipped:,} projects walked"
    )
