"""The one line that says why a dlt step failed, and whether it failed for a full disk."""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator

from drone_ops_sync.sources.drone_ops import DroneOpsError

NO_SPACE = "No space left on device"
"""The OS's words for ENOSPC, which DuckDB and PostgreSQL put into their own errors' text."""
_QUOTED_PATH = re.compile(r"""["'](/[^"']+)["']""")


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


def chained(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every error behind it (dlt's wrapped `exception`, causes and contexts), each
    once: a full disk can hide off `innermost`'s one path (dlt's copy after a failed rename
    carries the rename's `[Errno 18] Invalid cross-device link` as its context)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for inner in (getattr(current, "exception", None), current.__cause__, current.__context__):
            if isinstance(inner, BaseException):
                pending.append(inner)


def _says_disk_full(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    # DuckDB's IO and commit errors, psycopg2's `DiskFull` (SQLSTATE 53100)
    return type(error).__name__ == "DiskFull" or NO_SPACE in str(error)


def is_disk_full(exc: BaseException) -> bool:
    """Whether a full disk is behind `exc`, however dlt, DuckDB or the database wrapped it."""
    return any(_says_disk_full(error) for error in chained(exc))


def full_path(exc: BaseException) -> str | None:
    """The file a full disk refused, when the error names one (an `OSError`'s filename, or
    the quoted path of DuckDB's `Could not write file "..."`)."""
    for error in chained(exc):
        if not _says_disk_full(error):
            continue
        if isinstance(error, OSError) and error.filename:
            return str(error.filename)
        match = _QUOTED_PATH.search(str(error))
        if match:
            return match.group(1)
    return None
