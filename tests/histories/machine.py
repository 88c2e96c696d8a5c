"""A generated history's frame: its world, the model and the checks after every step, and the
as-of check at its end. The steps themselves are rules of the subclasses (`api_steps.py`,
`sync_steps.py`); docs/reliability.md, "Generated histories", says what is generated and why.

A failing history is shrunk by Hypothesis and printed as the sequence of rule calls that
reproduces it; `test_regressions.py` keeps each one found, spelled out as a plain test.
"""

from __future__ import annotations

import copy
import itertools
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant

from drone_ops_sync.pipelines.run.sync import SyncOutcome
from tests.chaos.truth import compare_with_api
from tests.pipelines.warehouse_check import api_snapshot

from . import checks
from .expected import Expected, RunAsked, Tables, webhook_variants
from .moments import Moments
from .world import Delivery, Place, World, open_world

SEED = 5
"""The simulator's seed: the same workspace at the start of every history, so a history
Hypothesis replays (to shrink it) starts where it started."""


@dataclass
class Tally:
    """What a test or the long profile ran, for its report."""

    histories: int = 0
    steps: int = 0
    runs: int = 0
    deliveries: int = 0
    as_of_checks: int = 0
    seconds: float = 0.0
    run_seconds: float = 0.0
    check_seconds: float = 0.0
    as_of_seconds: float = 0.0


@dataclass
class Setting:
    """Where and how a test's histories run, and what they ran."""

    place: Place
    dbt_dir: Path
    check_as_of: bool = True
    tally: Tally = field(default_factory=Tally)


class HistoryFrame(RuleBasedStateMachine):
    setting: Setting
    """Given by the subclass a test makes for its place (`profiles.histories_in`)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = time.monotonic()
        self.stack = ExitStack()
        self.world: World = self.stack.enter_context(open_world(self.setting.place, SEED))
        self.expected = Expected()
        self.caught: list[Delivery] = []
        """Every delivery the API sent, in the order sent, for the history to hand over."""
        self.listed: checks.Listed = set()
        self.moments = Moments()
        self.api: Tables = {}
        """The API's listing after the last step, for the rules to draw ids from."""
        self.counter = itertools.count(1)
        """Numbers for what the history names itself (forged deliveries, projects)."""
        self.setting.tally.histories += 1

    # -- what the steps share --------------------------------------------------------------------
    def look(self) -> Tables:
        """The API's listing now, by the test's own walk."""
        self.api = api_snapshot(self.world.sim.base_url, self.world.sim.read_key)
        return self.api

    def catch(self) -> list[Delivery]:
        """The deliveries the API sent since the last look, kept for later."""
        new = self.world.sent()
        self.caught += new
        return new

    def deliver(self, delivery: Delivery) -> None:
        """Hands a delivery over; the receiver must answer as the model says."""
        status = self.world.deliver(delivery)
        expected = self.expected.received(delivery.event)
        assert status == expected, f"{delivery.delivery_id}: answered {status}, not {expected}"
        self.setting.tally.deliveries += 1

    def apply(self) -> set[str]:
        """The applier's tick; returns the projects the model says it wrote."""
        self.world.apply()
        return self.expected.applied()

    def ran(self, outcome: SyncOutcome, asked: RunAsked, earlier: Tables | None = None) -> Tables:
        """After a run: the model moved (to the variant the warehouse matches, when the walk was
        raced: `earlier` is the API before the race), each retired id confirmed gone by id, the
        moment kept. Returns the API's listing after the run."""
        before = copy.deepcopy(self.expected.tables)
        api = self.look()
        self.listed |= checks.listed_versions(api)
        if asked.listed:  # what the run's own listing said, before the walk was raced
            self.listed |= checks.listed_versions({"projects": asked.listed})
        statuses = {name: result.status for name, result in outcome.report.tables.items()}
        self.expected.after_run(api, statuses, asked)
        if earlier is not None:
            variants = webhook_variants(self.expected.tables, earlier)
            _, self.expected.tables = checks.current_problems(
                self.world, variants, self.expected.users
            )
        problems = checks.deletion_problems(self.world, before, self.expected.tables)
        assert not problems, "\n".join(problems)
        self.moments.add(datetime.now(UTC), self.expected.tables)
        self.setting.tally.runs += 1
        return api

    def clean(self, api: Tables) -> None:
        """After a clean exact run: the warehouse is the API, whatever the model says."""
        report = compare_with_api(self.world.warehouse, self.world.target.dataset, api)
        assert not report.problems(), "after a clean run:\n" + "\n".join(report.problems())

    # -- the first step, what holds after every step, the end ---------------------------------
    @initialize()
    def first_sync(self) -> None:
        self.look()
        self.catch()
        outcome, _ = self.world.run()
        assert outcome.ok, outcome.report.tables
        self.clean(self.ran(outcome, RunAsked()))

    @invariant()
    def holds(self) -> None:
        started = time.monotonic()
        problems, _ = checks.current_problems(
            self.world, [self.expected.tables], self.expected.users
        )
        problems += checks.events_problems(self.world, self.expected.outcomes)
        problems += checks.version_problems(self.world, self.listed)
        assert not problems, "\n".join(problems)
        self.setting.tally.steps += 1
        self.setting.tally.check_seconds += time.monotonic() - started

    def teardown(self) -> None:
        try:
            if self.setting.check_as_of and len(self.moments) > 1:
                started = time.monotonic()
                problems = self.moments.problems(self.world, self.setting.dbt_dir)
                self.setting.tally.as_of_seconds += time.monotonic() - started
                assert not problems, "as-of functions:\n" + "\n".join(problems[:20])
                self.setting.tally.as_of_checks += 1
        finally:
            self.setting.tally.run_seconds += self.world.run_seconds
            self.stack.close()
            self.setting.tally.seconds += time.monotonic() - self.started
