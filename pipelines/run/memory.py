"""The process's malloc arenas, limited before a run starts its threads.

glibc gives threads that allocate at the same time arenas of their own, up to eight per core,
and an arena keeps the memory its threads freed for their next allocations. A run has about
forty threads (walk, job workers, spills, dlt's pool, DuckDB's) that allocate and free page-sized
buffers all the time, so its footprint followed the number of arenas more than what it held:
measured at `large`, 0 ms, peak RSS 548 MB with glibc's default and 494 MB with two arenas, no
slower (docs/performance.md). `MALLOC_ARENA_MAX` in the environment, read by glibc itself,
wins; elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8
"""glibc's mallopt parameter number for the arena limit (malloc.h)."""


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Asks glibc for at most `arenas` arenas; True when it took the setting."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # musl and others have no mallopt
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))
