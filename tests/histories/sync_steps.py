"""The sync's side of a history: runs of every kind and webhook deliveries.

- runs: exact (every project's jobs), rolling (`job_refresh_slices` 2 or 3), a full refresh,
  one interrupted as its n-th request is sent (the run's cancel token, what Ctrl-C sets), and
  one raced: after the run has listed the active projects, one of them changes and (or not)
  its event is applied before the run loads (`tests/pipelines/run_seams.py`);
- deliveries: any delivery the API sent, handed to the receiver late, out of order, twice;
  and deliveries the API never sent, validly signed: a project that never existed, a name the
  API never had at the same `updated`, a version from the future (`updated` past the API's),
  an old version replayed under a new delivery id, an event of another kind; then applied by
  the receiver's applier, at a step of the history's choosing.
"""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from .api_steps import ApiSteps
from .expected import Records, RunAsked
from .values import EDGE_MS, text
from .world import Delivery

FORGED = ("unknown_project", "other_name", "future", "replayed", "other_kind")
FUTURE_MS = (1, 60_000, 86_400_000, 366 * 86_400_000)


class Histories(ApiSteps):
    """Every step a generated history may take (the class the tests run)."""

    # -- runs -----------------------------------------------------------------------------------
    def sync(self, *, slices: int = 1, full_refresh: bool = False) -> None:
        outcome, _ = self.world.run(slices=slices, full_refresh=full_refresh)
        assert outcome.ok, outcome.report.tables
        api = self.ran(outcome, RunAsked(slices=slices, full_refresh=full_refresh))
        if slices == 1 or full_refresh:
            self.clean(api)

    @rule()
    def run_exact(self) -> None:
        self.sync()

    @rule(slices=st.integers(2, 3))
    def run_rolling(self, slices: int) -> None:
        self.sync(slices=slices)

    @rule(slices=st.integers(2, 3))
    def run_full_refresh(self, slices: int) -> None:
        self.sync(slices=slices, full_refresh=True)

    @rule(at=st.integers(1, 12), slices=st.integers(1, 3))
    def run_interrupted(self, at: int, slices: int) -> None:
        """Stopped as its `at`-th request is sent: each table loads whole or not at all."""
        outcome, seam = self.world.run(slices=slices, interrupt_at=at)
        statuses = {result.status for result in outcome.report.tables.values()}
        if seam.requests < at:
            assert outcome.ok, outcome.report.tables
        assert statuses <= {"success", "interrupted"}, outcome.report.tables
        self.ran(outcome, RunAsked(slices=slices))

    @precondition(lambda self: self.ids("projects", archived=False))
    @rule(data=st.data(), before=st.booleans(), applied=st.booleans(), name=text(100))
    def run_raced(self, data: st.DataObject, before: bool, applied: bool, name: str) -> None:
        """One active project changes (and its event is applied, or not) after the run listed
        it; changed before the run too, or not, so the run's listing may be newer than the
        warehouse's version, and the event's newer still."""
        active = self.ids("projects", archived=False)
        project_id = active[data.draw(st.integers(0, len(active) - 1), label="project")]
        if before:
            self.world.write("PATCH", f"/v1/projects/{project_id}", {"name": f"{name} (before)"})
            self.catch()
        earlier = copy.deepcopy(self.look())
        held = copy.deepcopy(self.expected.tables["projects"])
        listed: Records = {}
        raced: set[str] = set()

        def race(page: list[dict[str, Any]]) -> None:
            seen = [record for record in page if record["id"] == project_id]
            if not seen:
                return
            listed[project_id] = seen[0]
            self.world.write("PATCH", f"/v1/projects/{project_id}", {"name": name})
            for delivery in self.catch():
                if applied and delivery.event["data"]["id"] == project_id:
                    self.deliver(delivery)
            if applied:  # what else was pending is applied with it, during the walk too
                raced.update(self.apply())

        outcome, _ = self.world.run(after_listing=race)
        assert outcome.ok, outcome.report.tables
        asked = RunAsked(listed=listed or None, raced=frozenset(raced), held=held)
        self.ran(outcome, asked, earlier)

    # -- deliveries -----------------------------------------------------------------------------
    @precondition(lambda self: self.caught)
    @rule(data=st.data())
    def deliver_sent(self, data: st.DataObject) -> None:
        """Deliveries the API sent, whenever and in whatever order the history likes: late,
        out of order, the same one twice."""
        sent = st.integers(0, len(self.caught) - 1)
        for index in data.draw(st.lists(sent, min_size=1, max_size=4), label="sent"):
            self.deliver(self.caught[index])

    @precondition(lambda self: self.ids("projects"))
    @rule(
        data=st.data(),
        kind=st.sampled_from(FORGED),
        name=text(100),
        ahead=st.sampled_from(FUTURE_MS),
        timestamp=st.none() | st.sampled_from(EDGE_MS),
    )
    def deliver_forged(
        self, data: st.DataObject, kind: str, name: str, ahead: int, timestamp: int | None
    ) -> None:
        """A delivery the API never sent, validly signed (the receiver cannot tell)."""
        project = copy.deepcopy(self.pick(data, "projects"))
        event_kind = "project.updated"
        if kind == "unknown_project":
            project.update(id=f"prj_never_{next(self.counter)}", name=name)
            event_kind = "project.created"
        elif kind == "other_name":
            project["name"] = name
        elif kind == "future":
            project.update(name=name, updated=project["updated"] + ahead)
        elif kind == "replayed" and self.caught:
            old = self.caught[data.draw(st.integers(0, len(self.caught) - 1), label="old")]
            project, event_kind = old.event["data"], old.event["event"]
        elif kind == "other_kind":
            event_kind = "project.deleted"
        event = {
            "delivery_id": f"dlv_forged_{next(self.counter)}",
            "event": event_kind,
            "timestamp": int(time.time() * 1000) if timestamp is None else timestamp,
            "workspace_id": self._workspace_id(),
            "data": project,
        }
        self.deliver(Delivery.signed(event))

    @precondition(lambda self: self.expected.pending)
    @rule()
    def apply_events(self) -> None:
        """The applier's tick: everything spooled since the last one."""
        self.apply()
        self.moments.add(datetime.now(UTC), self.expected.tables)

    def _workspace_id(self) -> str:
        for delivery in self.caught:
            return str(delivery.event["workspace_id"])
        return "ws_unknown"
