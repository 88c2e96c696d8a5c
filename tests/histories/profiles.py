"""How many histories, how long, and how they are drawn: the suite's profile and the long one.

`SUITE` is small enough for CI (docs/reliability.md has its cost) and reproducible:
derandomized (the same histories every run, drawn from a seed Hypothesis derives from the
test) with no example database, so a run never replays what another machine found. `LONG` is
`python -m bench.histories`: many more and longer histories, drawn afresh each time. Both leave
Hypothesis's deadline off (a step may be a sync, slower still on a busy machine) and its health
checks about slowness and size (a history is slow by nature).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from .machine import Setting
from .sync_steps import Histories

QUIET_CHECKS = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]
SUITE = settings(
    max_examples=3,
    stateful_step_count=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=QUIET_CHECKS,
    print_blob=True,
)
HANG_GUARD_S = 2_400
"""The suite's per-test hang guard for the histories: a failing history is shrunk before it is
reported, replaying it many times (Hypothesis gives up on a shrink only once it has made slow
progress for a while), so the default guard would cut the report off."""
LONG = settings(SUITE, max_examples=1_000, stateful_step_count=40, derandomize=False)


def run_histories(setting: Setting, profile: settings) -> None:
    """Runs the profile's histories in `setting`; raises with the shrunk history when one
    fails."""
    machine = type(f"Histories_{setting.place.kind}", (Histories,), {"setting": setting})
    run_state_machine_as_test(machine, settings=profile)
