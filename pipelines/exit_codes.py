"""The exit codes of `drone-sync` (README "Running it on a schedule", docs/operations.md).

They let a scheduler tell what to do next without reading the output: 0 success, 1 a table
failed or was refused (or dbt failed), 2 configuration error, 75 warehouse busy, 130 / 143
interrupted by SIGINT / SIGTERM (128 + the signal's number, as shells report it; set by
`run/signals.py`), 141 the standard output was closed (SIGPIPE's code, as a shell reports a Unix
tool that a closed pipe ended). Every code is here, so this file answers "what does exit N mean".
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
"""Some table failed or was refused, the API could not be reached, a disk was full (the run
stopped at the refused write, `run/disk_full.py`), or dbt failed."""
EXIT_STALE = 1
"""`drone-sync status`: some table's last successful sync is older than `--max-age` (or there
is none), or the warehouse could not be read."""
EXIT_CONFIG = 2
"""A setting or flag is wrong: the message names it. Retrying will not help."""
EXIT_BUSY = 75
"""EX_TEMPFAIL: another run holds the warehouse, or another program holds the DuckDB file."""
EXIT_SIGINT = 130
"""Interrupted by SIGINT (Ctrl-C): the next run picks up."""
EXIT_SIGTERM = 143
"""Interrupted by SIGTERM (a scheduler's stop, `docker stop`): the next run picks up."""
EXIT_SIGPIPE = 141
"""The standard output was closed before the command finished writing (`drone-sync ... | head`):
the command ended there without a word, as SIGPIPE ends `git log`, `cat` or `seq` (a shell with
`set -o pipefail` reports 141 for them too). A `run` so ended stops as at SIGTERM: the next run
picks up."""
