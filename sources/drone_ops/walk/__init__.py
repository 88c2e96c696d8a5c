"""The concurrent walk of a workspace: lists, projects with their jobs, webhook chains."""

from .context import ProgressCallback, WalkStats
from .plan import WalkPlan
from .walk import WorkspaceWalk

__all__ = ["ProgressCallback", "WalkPlan", "WalkStats", "WorkspaceWalk"]
