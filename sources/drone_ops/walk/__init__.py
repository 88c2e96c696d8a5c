"""The concurrent walk of a workspace: lists, projects with their jobs, webhook chains.

`WorkspaceWalk` composes the three walkers over one `WalkContext`; `WalkPlan` says what to walk;
`TableSnapshot` (`spill.py`) holds each table's typed batches on local disk.
"""

from .context import ProgressCallback, WalkStats
from .plan import WalkPlan
from .spill import TableSnapshot
from .walk import WorkspaceWalk

__all__ = ["ProgressCallback", "TableSnapshot", "WalkPlan", "WalkStats", "WorkspaceWalk"]
