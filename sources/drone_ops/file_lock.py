"""The one way this package locks a file: `flock`, which the kernel releases when the process
holding it dies, so a killed run never leaves a lock behind. The warehouse's locks
(`pipelines/run/lock.py`) and an API host's shared request budget (`http/host_budget.py`)
both take theirs here.
"""

from __future__ import annotations

import fcntl


def try_lock(fd: int, *, shared: bool = False) -> bool:
    """Takes the lock on `fd` if nobody holds it in a conflicting mode; never waits."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock(fd: int, *, shared: bool = False) -> None:
    """Takes the lock on `fd`, waiting as long as it is held in a conflicting mode."""
    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
