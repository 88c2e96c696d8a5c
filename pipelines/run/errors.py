"""The one line that says why a dlt step failed."""

from __future__ import annotations

from drone_ops_sync.sources.drone_ops import DroneOpsError


def innermost(exc: BaseException) -> BaseException:
    """The innermost error of dlt's wrapped exceptions, which is the one that says why."""
    seen: set[int] = set()
    current: BaseException = exc
    while id(current) not in seen:
        seen.add(id(current))
        inner = getattr(current, "exception", None) or current.__cause__ or current.__context__
        if not isinstance(inner, BaseException):
            break
        current = inner
    return current


def root_cause(exc: BaseException) -> str:
    """The innermost error as one line: its type and message (ours: the message alone)."""
    current = innermost(exc)
    if isinstance(current, DroneOpsError):
        return str(current)
    return f"{type(current).__name__}: {current}"
