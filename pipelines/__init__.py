"""Entry points of drone-ops-sync: the CLI, runs, the demo and the dbt runner.

dlt reads its runtime configuration once, when it is first imported, and starts its anonymous
telemetry then. So the default that keeps a run from talking to anything but the API is set
here, before any module of this package imports dlt: telemetry is off unless the environment
turns it on (`RUNTIME__DLTHUB_TELEMETRY=true`). dlt's own SIGINT/SIGTERM handling is off too:
the CLI handles the signals (see `pipelines.run.signals.SignalStop`). And the process's malloc
arenas are limited before any thread starts, and Arrow's default pool is glibc's malloc
rather than mimalloc, which must be said before pyarrow is imported (`pipelines.run.memory`).
"""

import os

from .run.memory import limit_malloc_arenas, prefer_system_arrow_pool

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
os.environ.setdefault("RUNTIME__INTERCEPT_SIGNALS", "false")
limit_malloc_arenas()
prefer_system_arrow_pool()
