"""Generated jobs, built on first read from (seed, index) and fitted to their project.

A job is created while its project is open for work, starts and ends within the project's
dates (and by the day the project completed or was aborted), takes a status that fits both its
own dates at the anchor and its project's status, flies near the project's site, and has a
task and capture types that follow its job type. Only the ordering keys (`LazyJob`) of the
hundreds of thousands of jobs at `large` are kept in memory.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from .catalog import EXTRA_CAPTURES, NOTES, OTHER_REASONS, SITE_KINDS, TASKS, Task
from .rules import CAPTURE_TYPES
from .seeded import DAY_MS, HOUR_MS, between, date_ms, ms_to_date, row_rng
from .timeline import PAUSES, PRE_START, ProjectPlan, offset
from .validation import RECURRING_FIELDS

WEEK_CHOICES = [1, 2, 3, 4, -1]
Weighted = tuple[tuple[str, int], ...]

# A job's status by its project's status and where the anchor falls in the job's own dates:
# "future" (starts on or after the anchor), "current", "past" (ended before the anchor).
_OPEN: dict[str, Weighted] = {
    "future": (("draft", 1), ("not_started", 4), ("planned", 6)),
    "current": (
        ("in_progress", 10),
        ("on_hold", 1),
        ("weather_delayed", 1),
        ("technical_issues", 1),
        ("other", 1),
    ),
    "past": (("completed", 12), ("cancelled", 1), ("aborted", 1)),
}
_PAUSED: dict[str, Weighted] = {
    "future": (("not_started", 1), ("planned", 1)),
    "current": (("on_hold", 3), ("weather_delayed", 2), ("technical_issues", 2)),
    "past": (("completed", 8), ("cancelled", 1)),
}
_DONE: Weighted = (("completed", 14), ("cancelled", 1), ("aborted", 1))
JOB_STATUS: dict[str, dict[str, Weighted]] = {
    **{s: {"future": ((s, 3), ("not_started", 2), ("planned", 2))} for s in PRE_START},
    "in_progress": _OPEN,
    **dict.fromkeys(PAUSES, _PAUSED),
    "completed": {"current": _DONE, "past": _DONE},
    "cancelled": {
        "future": (("cancelled", 1),),
        "current": (("cancelled", 1),),
        "past": (("completed", 6), ("cancelled", 4), ("aborted", 1)),
    },
    "aborted": {
        "future": (("cancelled", 1),),
        "current": (("aborted", 3), ("cancelled", 1)),
        "past": (("completed", 5), ("aborted", 3), ("cancelled", 1)),
    },
    "other": {
        "future": (("planned", 3), ("not_started", 2), ("other", 1)),
        "current": (("in_progress", 4), ("on_hold", 2), ("other", 2)),
        "past": (("completed", 5), ("cancelled", 1), ("other", 1)),
    },
}


@dataclass(slots=True)
class LazyJob:
    """Ordering key and parentage of a job whose content is built on first read."""

    index: int
    project_index: int
    project_id: str
    created: int


@dataclass(frozen=True, slots=True)
class CustomType:
    """A custom job type, with the kinds of site it serves and its tasks."""

    id: str
    created: int
    kinds: tuple[int, ...]
    tasks: tuple[Task, ...]


def weighted(rng: random.Random, choices: Weighted) -> str:
    pick = rng.randrange(sum(w for _, w in choices))
    for value, w in choices:
        pick -= w
        if pick < 0:
            return value
    raise AssertionError("unreachable")


class JobMaker:
    """Builds generated jobs for one seed and anchor."""

    def __init__(self, seed: int, anchor: date, end_ms: int, custom: list[CustomType]) -> None:
        self.seed = seed
        self.anchor = anchor
        self.end_ms = end_ms
        self.custom = custom

    def build(self, key: LazyJob, job_id: str, plan: ProjectPlan) -> dict[str, Any]:
        """Full record of a generated job (pure in seed, index, key and its project's plan)."""
        rng = row_rng(self.seed, "job", key.index)
        kind = SITE_KINDS[plan.kind]
        fitting = [c for c in self.custom if plan.kind in c.kinds and c.created <= key.created]
        if fitting and rng.random() < 0.15:
            chosen = fitting[rng.randrange(len(fitting))]
            jtype, tasks = chosen.id, chosen.tasks
        else:
            jtype = kind.job_types[rng.randrange(len(kind.job_types))]
            tasks = TASKS[jtype]
        task = tasks[rng.randrange(len(tasks))]
        captures = list(task.captures)
        if jtype in CAPTURE_TYPES and jtype not in captures:
            captures.insert(0, jtype)
        if rng.random() < 0.3:
            extra = EXTRA_CAPTURES[rng.randrange(len(EXTRA_CAPTURES))]
            if extra not in captures:
                captures.append(extra)
        recurring = rng.random() < 0.4
        start, end = self._dates(rng, key, plan, recurring)
        if end is not None and end < self.anchor:
            phase = "past"
        elif start >= self.anchor:
            phase = "future"
        else:
            phase = "current"
        status = weighted(rng, JOB_STATUS[plan.status][phase])
        rec = recurrence(rng) if recurring else dict.fromkeys(RECURRING_FIELDS)
        lat: float | None = None
        lon: float | None = None
        if rng.random() < 0.88:
            lat, lon = offset(rng, plan.lat, plan.lon, kind.job_km)
        number = key.index % 1000 + 1
        row = {
            "id": job_id,
            "name": f"{task.name} #{number}",
            "description": None
            if rng.random() < 0.3
            else f"{task.name} for asset group {rng.randrange(1, 40)}.",
            "type": jtype,
            "status": status,
            "priority": ("low", "medium", "medium", "high")[rng.randrange(4)],
            "job_pattern": "recurring" if recurring else "one_time",
            "start_date": start.isoformat(),
            "end_date": end.isoformat() if end else None,
            "latitude": lat,
            "longitude": lon,
            "project_id": key.project_id,
            "inspection_notes": NOTES[rng.randrange(len(NOTES))] if rng.random() < 0.5 else None,
            "capture_types": captures,
            "external_id": f"WO-{rng.randrange(10**6):06d}" if rng.random() < 0.5 else None,
            "created": key.created,
            "updated": self._updated(rng, key.created, status, start, end),
            "other_status_reason": OTHER_REASONS[rng.randrange(len(OTHER_REASONS))]
            if status == "other"
            else None,
        }
        row.update(rec)
        return row

    def _dates(
        self, rng: random.Random, key: LazyJob, plan: ProjectPlan, recurring: bool
    ) -> tuple[date, date | None]:
        """Start and end inside the project's dates, the start at most a week before creation.

        Jobs are scheduled when they are created, so a start long before creation would be
        back-dating; a week is allowed (the API's own limit is six months).
        """
        created_on = ms_to_date(key.created)
        if plan.end is not None:
            last = plan.end
        else:
            last = max(plan.start + timedelta(days=400), created_on + timedelta(days=180))
        if plan.closed_on is not None:
            last = min(last, plan.closed_on)
        first = max(plan.start, created_on - timedelta(days=7))
        if first > last:
            first = max(plan.start, min(created_on - timedelta(days=182), last))
        start = first + timedelta(days=rng.randrange((last - first).days + 1))
        length = rng.randrange(30, 301) if recurring else rng.randrange(0, 11)
        end: date | None = min(start + timedelta(days=length), last)
        if plan.end is None and plan.closed_on is None and rng.random() < 0.3:
            end = None
        return start, end

    def _updated(
        self, rng: random.Random, created: int, status: str, start: date, end: date | None
    ) -> int:
        """When the job last changed: its status change, or a later edit of a job not started."""
        if status in PRE_START:
            t = created if rng.random() < 0.5 else created + rng.randrange(30 * DAY_MS)
        elif status == "completed":
            t = date_ms(end or start) + between(rng, 8 * HOUR_MS, 20 * HOUR_MS)
        elif status in ("cancelled", "other"):
            t = between(rng, created, self.end_ms)
        else:
            t = date_ms(start) + between(rng, 6 * HOUR_MS, 18 * HOUR_MS)
        return min(max(t, created), max(self.end_ms, created))


def recurrence(rng: random.Random) -> dict[str, Any]:
    """Valid recurrence fields for a recurring job (every frequency and monthly variant)."""
    rec: dict[str, Any] = dict.fromkeys(RECURRING_FIELDS)
    freq = ("daily", "weekly", "weekly", "monthly", "monthly", "yearly", "flexible")[
        rng.randrange(7)
    ]
    rec["recurring_frequency"] = freq
    rec["flights_per_occurrence"] = rng.randrange(1, 5)
    if freq != "flexible":
        rec["recurring_interval"] = (1, 1, 1, 2, 3, 4)[rng.randrange(6)]
    if freq == "daily":
        rec["recurring_interval"] = rng.randrange(3, 15)
    if freq == "weekly":
        rec["selected_days_of_week"] = sorted(rng.sample(range(7), rng.randrange(1, 4)))
    if freq == "monthly":
        r = rng.random()
        if r < 0.4:
            rec["weeks_of_month"] = sorted(rng.sample(WEEK_CHOICES, rng.randrange(1, 3)))
            rec["selected_days_of_week"] = [rng.randrange(1, 6)]
        elif r < 0.7:
            rec["week_of_month"] = WEEK_CHOICES[rng.randrange(5)]
    return rec
