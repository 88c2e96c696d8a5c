"""Project lifecycles: where each project ends up, and the milestones on the way there.

A project is planned (`Planner.plan`): its final state and the milestones its status passes
(work starts on the start date and completes on the end date, or is cancelled, paused,
aborted; the project may be archived after it closes). `history.expand` then spends the
project's share of updates on optional edits between those milestones, so that webhooks have as
many deliveries to log as the scale asks for. Every version obeys the status rules at its own
date (docs/simulator-data.md), each update changes something, and the last version is what the
API serves.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from .catalog import (
    LONG_DESCRIPTION,
    OTHER_REASONS,
    PLACES,
    PLACES_OF_KIND,
    PROGRAMMES,
    SITE_KINDS,
    UNICODE_DESCRIPTION,
)
from .seeded import DAY_MS, HOUR_MS, between, date_ms, hex_id, ms_to_date, row_rng

PRE_START = ("draft", "not_started", "planned")
PAUSES = ("on_hold", "weather_delayed", "technical_issues")
# statuses a project (or job) can only have once work has started
STARTED = ("in_progress", *PAUSES, "completed", "aborted")
CLOSED = ("completed", "cancelled", "aborted")
STATUS_WEIGHTS = (
    ("draft", 3),
    ("not_started", 10),
    ("planned", 12),
    ("in_progress", 14),
    ("completed", 22),
    ("on_hold", 4),
    ("weather_delayed", 3),
    ("technical_issues", 2),
    ("cancelled", 3),
    ("aborted", 1),
    ("other", 2),
)
STATUS_POP = [s for s, w in STATUS_WEIGHTS for _ in range(w)]

# A version is a tuple of the fields that change, in this order; `created`, `id` and
# `created_by` never change and live on the plan.
UPDATED, NAME, DESCRIPTION, STATUS, START, END, ARCHIVED, EXTERNAL, LAANC, REASON = range(10)
Version = tuple[Any, ...]


def record(plan: ProjectPlan, v: Version) -> dict[str, Any]:
    """The project as the API shows it at version `v` (field order of the Project record)."""
    return {
        "id": plan.id,
        "name": v[NAME],
        "description": v[DESCRIPTION],
        "status": v[STATUS],
        "start_date": v[START],
        "end_date": v[END],
        "created": plan.created,
        "updated": v[UPDATED],
        "archived": v[ARCHIVED],
        "external_id": v[EXTERNAL],
        "laanc_number": v[LAANC],
        "created_by": plan.created_by,
        "other_status_reason": v[REASON],
    }


@dataclass(slots=True)
class ProjectPlan:
    """A project's final state and the milestones of its history."""

    index: int
    id: str
    created: int
    until: int  # every event of the project happens before this instant (anchor or deletion)
    kind: int
    lat: float
    lon: float
    name: str
    draft_name: str
    description: str
    site: str
    status: str
    start: date
    end: date | None
    archived: bool
    external_id: str | None
    laanc_number: str | None
    created_by: dict[str, Any] | None
    other_status_reason: str | None
    pre_status: str | None  # status while work has not started; None when created started
    t_start: int | None  # work starts (status becomes in_progress)
    t_term: int | None  # the final status is set
    t_archive: int | None
    work_end: int  # jobs are created before this instant
    closed_on: date | None  # completed/aborted: work ended that day

    @property
    def min_updates(self) -> int:
        return sum(t is not None for t in (self.t_start, self.t_term, self.t_archive))

    @property
    def edit_end(self) -> int:
        """Edits stop when the project closes (completed, cancelled, aborted) or is archived."""
        stop = self.t_term if self.t_term is not None and self.status in CLOSED else self.until
        return min(stop, self.t_archive) if self.t_archive is not None else stop

    @property
    def weight(self) -> int:
        """Days the project was open for edits: older projects collect more updates."""
        return max(1, (self.edit_end - self.created) // DAY_MS)


class Planner:
    """Plans and expands project histories for one seed (pure in seed and index)."""

    def __init__(
        self,
        seed: int,
        visible: int,
        start_ms: int,
        end_ms: int,
        staff: list[tuple[int, dict[str, Any]]],
        api_key_creator: dict[str, Any],
    ) -> None:
        self.seed = seed
        self.visible = visible
        self.start_ms = start_ms
        self.end_ms = end_ms
        self.step = (end_ms - start_ms - DAY_MS) // max(visible, 1)
        self.staff = sorted(staff, key=lambda s: s[0])
        self.staff_times = [s[0] for s in self.staff]
        self.api_key_creator = api_key_creator

    # -- planning ----------------------------------------------------------------------------
    def plan(self, i: int) -> ProjectPlan:
        """Project `i`'s final state and milestones; indices past `visible` are deleted ones.

        The first draws are made in the order the generator made them before it simulated
        histories (creation time, kind, place, number, programme, intended status, start
        offset, duration, open end, archived, creator, API-key creator, two spent draws, id,
        CRM id, LAANC number), so each seed keeps its creation times, archived flags, ids and
        numbers: job counts per project, list page counts and the rolling job refresh's
        slices (by project id) depend on them.
        """
        rng = row_rng(self.seed, "project", i)
        deleted = i >= self.visible
        if deleted:
            created = self.start_ms + rng.randrange(self.end_ms - self.start_ms - 2 * DAY_MS)
        else:
            created = self.start_ms + i * self.step + rng.randrange(max(self.step, 1))
        kind = rng.randrange(len(SITE_KINDS))
        place_draw = rng.randrange(len(PLACES))
        number = rng.randrange(100, 999)
        programme = PROGRAMMES[rng.randrange(len(PROGRAMMES))]
        intended = STATUS_POP[rng.randrange(len(STATUS_POP))]
        created_on = ms_to_date(created)
        start = created_on + timedelta(days=rng.randrange(-10, 60))
        end: date | None = start + timedelta(days=rng.randrange(1, 365))
        if rng.random() < 0.25:
            end = None
        archived = rng.random() < 0.06
        if i == 1:
            archived = True
        elif i == 2:
            intended = "other"
        elif i == 3:
            end = None
        if end is not None:
            end = max(end, created_on + timedelta(days=1))
        pick = rng.randrange(len(self.staff))
        r = rng.random()
        life = rng.randrange(max(self.end_ms - created, 1))
        rng.random()  # drawn here before histories were simulated; spent to keep the order
        project_id = hex_id(rng, "prj_")
        external_id = f"CRM-{rng.randrange(10000, 99999)}" if rng.random() < 0.6 else None
        laanc_number = f"LAANC-{rng.randrange(10**7):07d}" if rng.random() < 0.3 else None
        until = created + max(life, DAY_MS) if deleted else self.end_ms + 1
        creator = self._creator(i, pick, r, created)
        site, lat, lon, description = _site(rng, i, kind, place_draw, number)
        plan = ProjectPlan(
            index=i,
            id=project_id,
            created=created,
            until=until,
            kind=kind,
            lat=lat,
            lon=lon,
            name=f"{site} — {programme} {created_on.year}"[:100],
            draft_name=f"{site} — {programme}"[:100],
            description=description,
            site=site,
            status=intended,
            start=start,
            end=end,
            archived=archived,
            external_id=external_id,
            laanc_number=laanc_number,
            created_by=creator,
            other_status_reason=None,
            pre_status=None,
            t_start=None,
            t_term=None,
            t_archive=None,
            work_end=until - 1,
            closed_on=None,
        )
        self._milestones(plan, rng)
        if plan.status == "other":
            plan.other_status_reason = OTHER_REASONS[rng.randrange(len(OTHER_REASONS))]
        return plan

    def _creator(self, i: int, pick: int, r: float, created: int) -> dict[str, Any] | None:
        """Who created project `i`: mostly a staff member who had joined by then (the root
        member always had), sometimes the API key, rarely nobody known."""
        eligible = max(bisect_right(self.staff_times, created), 1)
        creator: dict[str, Any] | None = self.staff[pick % eligible][1]
        if r < 0.08 or i == 0:
            creator = dict(self.api_key_creator)
        elif r < 0.1:
            creator = None
        return creator

    def _milestones(self, plan: ProjectPlan, rng: random.Random) -> None:
        """Final status (from the intended one and where `until` falls) and its milestones."""
        created, until, start, end = plan.created, plan.until, plan.start, plan.end
        created_on = ms_to_date(created)
        phase, final = _final_status(plan)
        plan.status = final
        # in_progress is allowed up to the end date's last millisecond
        work_stop = min(until, date_ms(end) + DAY_MS) if end is not None else until
        can_wait = start >= created_on  # created before work was due: a pre-start status first
        if final in PRE_START:
            plan.pre_status = final
        else:
            starts = final in STARTED
            if final in ("cancelled", "other") and phase != "before":
                before_start = can_wait and date_ms(start) > created + 2 and rng.random() < 0.4
                starts = not before_start
            if can_wait:
                plan.pre_status = ("planned", "planned", "not_started", "draft")[rng.randrange(4)]
            if starts and can_wait:
                morning = date_ms(start) + between(rng, 6 * HOUR_MS, 18 * HOUR_MS)
                plan.t_start = max(morning, created + 1)
            started = plan.t_start if plan.t_start is not None else created
            if final == "completed" and end is not None:
                plan.t_term = date_ms(end) + between(rng, 8 * HOUR_MS, 20 * HOUR_MS)
            elif final == "completed":
                lo = max(started + 1, date_ms(start) + 7 * DAY_MS)
                plan.t_term = between(rng, lo if lo < until - 2 else started + 1, until - 2)
            elif final != "in_progress" and starts:
                plan.t_term = between(rng, started + 1, work_stop - 2)
            elif final != "in_progress":
                stop = min(until, date_ms(start)) if phase != "before" else until
                plan.t_term = between(rng, created + 1, stop - 2)
        if plan.archived:
            assert plan.t_term is not None
            plan.t_archive = between(rng, plan.t_term + 1, until)
        if final in ("completed", "aborted"):
            assert plan.t_term is not None
            plan.closed_on = ms_to_date(plan.t_term)
        if final in CLOSED:
            assert plan.t_term is not None
            plan.work_end = plan.t_term
        elif end is not None:
            plan.work_end = min(plan.work_end, date_ms(end) + 90 * DAY_MS)
        plan.work_end = max(plan.work_end, created + 1)


def _final_status(plan: ProjectPlan) -> tuple[str, str]:
    """Where `until` falls against the planned dates (`before` the start, `during` the work,
    `after` the end) and the status the intended one becomes there."""
    today = ms_to_date(plan.until)
    intended, end = plan.status, plan.end
    if plan.start >= today:
        final = intended if intended in (*PRE_START, "cancelled", "other") else "planned"
        if plan.archived and final != "other":
            final = "cancelled"
        return "before", final
    if end is not None and end < today:
        return "after", intended if intended in (*CLOSED, "other") else "completed"
    if intended in ("in_progress", *PAUSES, "cancelled", "aborted", "other"):
        final = intended
    else:
        final = "completed" if intended == "completed" and end is None else "in_progress"
    if plan.archived and final not in (*CLOSED, "other"):
        final = "completed" if end is None else "cancelled"
    return "during", final


def _site(
    rng: random.Random, i: int, kind: int, place_draw: int, number: int
) -> tuple[str, float, float, str]:
    """Project `i`'s site name, coordinates (drawn next from `rng`) and description; projects
    3 and 4 carry the edge-case descriptions (non-ASCII, exactly 1,000 characters)."""
    places = PLACES_OF_KIND[kind]
    place = PLACES[places[place_draw % len(places)]]
    site_kind = SITE_KINDS[kind]
    site = site_kind.name_pattern.format(place=place.name, n=number)
    lat, lon = offset(rng, place.lat, place.lon, site_kind.site_km)
    description = (
        f"{site_kind.label} inspection programme for {site}. Deliverables: annotated "
        "imagery, defect register and a summary report for the asset owner."
    )
    if i == 3:
        description = UNICODE_DESCRIPTION
    elif i == 4:
        description = (LONG_DESCRIPTION * (1000 // len(LONG_DESCRIPTION) + 1))[:1000]
    return site, lat, lon, description


def offset(rng: random.Random, lat: float, lon: float, km: float) -> tuple[float, float]:
    """A point uniformly within `km` of (lat, lon), rounded to about a metre."""
    r = km * math.sqrt(rng.random())
    theta = 2 * math.pi * rng.random()
    dlat = r * math.cos(theta) / 111.0
    dlon = r * math.sin(theta) / (111.0 * max(math.cos(math.radians(lat)), 0.1))
    return round(lat + dlat, 5), round(lon + dlon, 5)
