"""A fleet's worker process: syncs the workspaces it is given, one after another, in itself.

Why: a workspace run in a process of its own pays the process's fixed costs every time (the
imports of dlt, DuckDB, pyarrow and rich, settings, the first SQL clients: about a second of CPU
and 140 MB before any work), which for a quiet workspace is most of its run. A worker pays them
once and then runs each workspace exactly as `drone-sync run --workspace NAME` would run it
alone (`cli.main`): its own pipeline, lock, repairs, `_sync_runs` rows, alert and summary.

The protocol with the fleet (`fleet.py`): one workspace name per line on stdin (end of input:
no more); on stdout each run's JSON events, then `{"event": "workspace_ended", "workspace":
NAME, "exit_code": CODE}`. A SIGTERM stops the workspace under way as it stops a single run,
and the worker then takes no other.
"""

from __future__ import annotations

import json
import sys
from typing import NoReturn

from ..console_script import exit_now
from .fleet import ENDED
from .signals import SignalStop


def main() -> NoReturn:
    """Runs `drone-sync run --workspace NAME <arguments>` for each NAME read from stdin."""
    stop = SignalStop()
    code = 0
    with stop.installed(), stop.guarding_stdout():
        try:
            from ..cli import main as command

            for line in sys.stdin:
                name = line.strip()
                if not name:
                    continue
                arguments = ["run", "--log-format", "json", "--workspace", name, *sys.argv[1:]]
                code = command(arguments, stop=stop)
                sys.stdout.write(json.dumps({"event": ENDED, "workspace": name, "exit_code": code}))
                sys.stdout.write("\n")
                sys.stdout.flush()
                if stop.received is not None:
                    break
        except KeyboardInterrupt:
            code = stop.exit_code
    exit_now(code)


if __name__ == "__main__":
    main()
