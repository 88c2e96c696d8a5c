"""A fleet's worker process: syncs the workspaces it is given, one after another, in itself,
each exactly as `drone-sync run --workspace NAME` would alone (`cli.main`), paying the imports,
settings and first clients once (docs/fleet.md, "Running").

The protocol with the fleet (`fleet.py`): one name per line on stdin (end of input: no more);
on stdout each run's JSON events, then the `ENDED` event with its exit code. A SIGTERM stops
the workspace under way as it stops a single run, and the worker then takes no other.
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
                event = {"event": ENDED, "workspace": name, "exit_code": code}
                print(json.dumps(event), flush=True)
                if stop.received is not None:
                    break
        except KeyboardInterrupt:
            code = stop.exit_code
    exit_now(code)


if __name__ == "__main__":
    main()
