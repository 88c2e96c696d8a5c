"""The process's malloc arenas, limited before a run starts its threads.

glibc gives threads that allocate at the same time arenas of their own, up to eight per core,
and an arena keeps the memory its threads freed for their next allocations. A run has about
forty threads (walk, job workers, spills, dlt's pool, DuckDB's) that allocate and free page-sized
buffers all the time, so its footprint followed the number of arenas more than what it held:
measured at `large`, 0 ms, peak RSS 548 MB with glibc's default and 494 MB with two arenas, no
slower (docs/performance.md). `MALLOC_ARENA_MAX` in the environment, read by glibc itself,
wins; elsewhere than glibc this does nothing.

Arrow's allocator is chosen the same way, once: pyarrow reads `ARROW_DEFAULT_MEMORY_POOL` when
it is imported, and its C++ code (dlt's parquet writing and reading, compute kernels) allocates
from that default whatever `pyarrow.set_memory_pool` says later, which only reaches pyarrow's
Python functions. The default, mimalloc, reserves a 1 GB region and keeps what it freed there:
30 MB resident at the peak of a `small` run. The system pool is glibc's malloc, bounded by the
arena limit above: the `small` run peaked 25 MB lower (docs/performance.md, "Where the memory
goes now"). So the system pool is asked for before anything imports pyarrow; an
`ARROW_DEFAULT_MEMORY_POOL` in the environment wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MALLOC_ARENAS = 2
ARROW_POOL = "system"
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


def prefer_system_arrow_pool(pool: str = ARROW_POOL) -> bool:
    """Asks pyarrow, not yet imported, for `pool` as its default; True when it will take it.

    False when the environment already names a pool or pyarrow was imported first (its
    default is then fixed for this process)."""
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ or "pyarrow" in sys.modules:
        return False
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = pool
    return True
