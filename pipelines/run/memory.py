"""The process's malloc arenas and Arrow's allocator, chosen before a run starts its threads.

glibc gives threads that allocate at once arenas of their own, and each keeps what its threads
freed; a run has dozens of such threads, so its footprint followed the number of arenas
more than what it held (docs/performance.md). pyarrow reads `ARROW_DEFAULT_MEMORY_POOL` once,
when imported, and its C++ code allocates from that default whatever `set_memory_pool` says
later; the system pool keeps less than mimalloc. So both are set before anything imports
pyarrow; `MALLOC_ARENA_MAX` or `ARROW_DEFAULT_MEMORY_POOL` in the environment wins.
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


def limit_malloc_arenas() -> bool:
    """Asks glibc for at most `MALLOC_ARENAS` arenas; True when it took the setting."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # musl and others have no mallopt
        return False
    return bool(mallopt(_M_ARENA_MAX, MALLOC_ARENAS))


def prefer_system_arrow_pool() -> bool:
    """Asks pyarrow, not yet imported, for `ARROW_POOL` as its default; False when the environment
    names one or pyarrow was imported first (its default is then fixed)."""
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ or "pyarrow" in sys.modules:
        return False
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = ARROW_POOL
    return True
