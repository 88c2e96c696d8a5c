"""What the warehouse should hold after each step of a history, written from the docs, not from
the sync's code: a small model that is told what the API showed (its own listing, read by the
test) and what the step was, and says which current rows every table must have.

- A run: each table its report calls a success holds the API's listing (projects: except a
  version an event applied during the run's walk, which the run must not overwrite; jobs on a
  rolling refresh: the jobs of the projects the run did not owe a walk stay as they were); a
  table that did not succeed holds what it held before (all or nothing per table,
  docs/reliability.md). Users are the creators the API shows, merged over runs (never retired).
  The deletion guard is off in histories (`world.py`).
- Received events (docs/events.md): a delivery id is spooled once (202), again it is a
  duplicate (200); each applied batch keeps, per project, the newest version it carries (the
  project's `updated`, then the event's `timestamp`, the first of equals) and writes it only
  when it is newer than the warehouse's current row (none counts as older than any); each
  spooled delivery gets one `_webhook_events` row with its outcome.
- The rolling job refresh (docs/sync-design.md): with N slices, a run walks the jobs of every
  project whose listed version the warehouse does not hold as current, plus those whose id's
  CRC-32 falls in slice `successful jobs syncs so far mod N`.
"""

from __future__ import annotations

import copy
import itertools
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.truth import expected_users

Records = dict[str, dict[str, Any]]
"""id -> the record, as the API shows it."""
Tables = dict[str, Records]

HISTORY_TABLES = ("projects", "jobs", "job_types", "team_members", "webhooks")
TABLES = (*HISTORY_TABLES, "webhook_deliveries")
PROJECT_EVENTS = ("project.created", "project.updated")
APPLIED, NOT_NEWER, IGNORED = "applied", "not_newer", "ignored"


def project_of(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The project an event carries, when it is a project event with an id and `updated`."""
    data = event.get("data")
    if event.get("event") not in PROJECT_EVENTS or not isinstance(data, dict):
        return None
    updated = data.get("updated")
    if not isinstance(data.get("id"), str) or not isinstance(updated, int):
        return None
    return None if isinstance(updated, bool) else data


def _order(event: Mapping[str, Any]) -> tuple[int, int]:
    project = project_of(event) or {}
    timestamp = event.get("timestamp")
    return int(project.get("updated", 0)), timestamp if isinstance(timestamp, int) else 0


def in_slice(project_id: str, slices: int, chosen: int) -> bool:
    return zlib.crc32(project_id.encode()) % slices == chosen


@dataclass(frozen=True)
class RunAsked:
    """What a run was asked to do, and what the test did during its walk."""

    slices: int = 1
    full_refresh: bool = False
    listed: Records | None = None
    """The run's listing of the projects the test changed during its walk (the versions the
    run saw), None when nothing was changed then."""
    raced: frozenset[str] = frozenset()
    """Projects whose version an event applied during the run's walk (the run must keep it:
    it is newer than anything the run could have listed)."""
    held: Records | None = None
    """The projects the warehouse held as current when the run started, when events applied
    during its walk changed them since (the rolling refresh compares with these)."""


@dataclass
class Expected:
    tables: Tables = field(default_factory=lambda: {table: {} for table in TABLES})
    users: Records = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    """delivery id -> its `_webhook_events` outcome."""
    spooled: set[str] = field(default_factory=set)
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Events spooled and not applied yet, in spool order."""
    job_syncs: int = 0
    """Runs whose `jobs` succeeded: the rolling refresh's slice counter."""

    def copy(self) -> Expected:
        return copy.deepcopy(self)

    # -- events ---------------------------------------------------------------------------------
    def received(self, event: dict[str, Any]) -> int:
        """The receiver's answer to a validly signed delivery of `event`."""
        if event["delivery_id"] in self.spooled:
            return 200
        self.spooled.add(event["delivery_id"])
        self.pending.append(event)
        return 202

    def applied(self) -> set[str]:
        """The applier's batch of everything pending; returns the projects it wrote."""
        batch, self.pending = self.pending, []
        projects = self.tables["projects"]
        held = {pid: int(record["updated"]) for pid, record in projects.items()}
        newest: dict[str, dict[str, Any]] = {}
        for event in batch:
            project = project_of(event)
            if project is None:
                self.outcomes[event["delivery_id"]] = IGNORED
                continue
            best = newest.get(project["id"])
            if best is None or _order(event) > _order(best):
                newest[project["id"]] = event
        for event in batch:
            project = project_of(event)
            if project is None:
                continue
            newer = project["updated"] > held.get(project["id"], -1)
            wins = newest[project["id"]] is event and newer
            self.outcomes[event["delivery_id"]] = APPLIED if wins else NOT_NEWER
            if wins:
                projects[project["id"]] = copy.deepcopy(project)
        return {p for p, event in newest.items() if self.outcomes[event["delivery_id"]] == APPLIED}

    # -- runs -----------------------------------------------------------------------------------
    def after_run(self, api: Tables, statuses: Mapping[str, str], asked: RunAsked) -> None:
        """The run's effect, given the API's listing (taken after the run: the API does not
        change during one but where `asked.listed` says) and each table's reported status."""
        listed = copy.deepcopy(api)
        if asked.listed:
            listed["projects"].update(copy.deepcopy(asked.listed))
        ok = {table for table, status in statuses.items() if status == "success"}
        before = self.tables
        after = {table: copy.deepcopy(before[table]) for table in TABLES}
        for table in TABLES:
            if table in ok:
                after[table] = copy.deepcopy(listed[table])
        if "projects" in ok:
            after["projects"].update(self._kept_by_run(listed["projects"], asked))
        if "jobs" in ok:
            rolling = asked.slices > 1 and not asked.full_refresh and self.job_syncs > 0
            if rolling:
                after["jobs"] = self._rolled_jobs(listed, asked)
            self.job_syncs += 1
        if "users" in ok:
            self.users = {**self.users, **expected_users(listed)}
        self.tables = after

    def _kept_by_run(self, listed: Records, asked: RunAsked) -> Records:
        """The versions events applied during the run's walk that the run keeps: those newer
        than its listing, and those of projects it neither listed nor held when it started
        (it compares with what it held then, so it has nothing to retire)."""
        held = self.tables["projects"] if asked.held is None else asked.held
        kept = {}
        for project_id in asked.raced:
            version = self.tables["projects"][project_id]
            seen = listed.get(project_id)
            newer = project_id not in held if seen is None else version["updated"] > seen["updated"]
            if newer:
                kept[project_id] = version
        return copy.deepcopy(kept)

    def _rolled_jobs(self, listed: Tables, asked: RunAsked) -> Records:
        """A rolling run's jobs: the listing's, but under a listed project the run owed no walk
        (held as current, outside the slice), what the warehouse held."""
        slices = asked.slices
        chosen = self.job_syncs % slices
        held = self.tables["projects"] if asked.held is None else asked.held
        skipped = {
            project_id
            for project_id, record in listed["projects"].items()
            if held.get(project_id) == record and not in_slice(project_id, slices, chosen)
        }
        kept = {j: r for j, r in self.tables["jobs"].items() if r.get("project_id") in skipped}
        walked = {j: r for j, r in listed["jobs"].items() if r.get("project_id") not in skipped}
        return copy.deepcopy({**kept, **walked})


def webhook_variants(expected: Tables, earlier: Tables) -> list[Tables]:
    """`expected` with each webhook, its row and its log together, as `earlier` showed it or
    as `expected` does: what a run whose walk raced a delivery may hold (each webhook's row
    comes with the first page of its log, walked once)."""
    hooks = sorted(set(expected["webhooks"]) | set(earlier["webhooks"]))
    variants = []
    for choice in itertools.product((False, True), repeat=len(hooks)):
        tables = dict(expected)
        tables["webhooks"] = dict(expected["webhooks"])
        tables["webhook_deliveries"] = dict(expected["webhook_deliveries"])
        for hook, old in zip(hooks, choice, strict=True):
            if not old:
                continue
            source = earlier
            tables["webhooks"].pop(hook, None)
            if hook in source["webhooks"]:
                tables["webhooks"][hook] = source["webhooks"][hook]
            logs = tables["webhook_deliveries"]
            for log_id in [i for i, r in logs.items() if r.get("webhook_id") == hook]:
                del logs[log_id]
            logs.update(
                {i: r for i, r in source["webhook_deliveries"].items() if r["webhook_id"] == hook}
            )
        variants.append(tables)
    return variants
