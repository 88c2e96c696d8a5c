"""The rolling job refresh: with `job_refresh_slices = N > 1`, a run walks the jobs of new and
changed projects plus one N-th of the others, so each project's jobs are walked at least every
N runs. Only what was walked can be compared, so only that can be found changed or gone.
"""

from __future__ import annotations

import zlib

from ..known import KnownState

JobSlice = tuple[int, int]
"""(slice, slices): this run walks the projects whose slice number is `slice`."""


def job_slice(slices: int, known: KnownState) -> JobSlice | None:
    """This run's slice; None walks all projects' jobs (not rolling, no jobs yet, full refresh)."""
    if slices == 1 or known.job_syncs is None or "jobs" not in known.existing:
        return None
    return known.job_syncs % slices, slices


def job_slice_of(project_id: str, slices: int) -> int:
    """The slice a project's jobs belong to: stable across runs, processes and machines (a
    checksum of the id, not Python's salted `hash`), so each slice is walked in turn."""
    return zlib.crc32(project_id.encode()) % slices


def rolling_scope(chosen: JobSlice, walked: int, skipped: int) -> str:
    """How `_sync_runs.scope` describes a rolling run's jobs comparison."""
    return (
        f"rolling refresh, slice {chosen[0] + 1} of {chosen[1]}:"
        f" jobs of {walked:,} of {walked + skipped:,} projects walked"
    )
