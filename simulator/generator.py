"""Deterministic, seeded workspace content that tells one consistent story.

Same seed + scale + anchor date give byte-identical API responses. The generator simulates
history rather than sampling fields independently: the team joins, job types are configured,
each project lives through its milestones (`timeline.py`), jobs are created while their project
is open and fit its dates and status (`jobs.py`), and webhooks log the project events emitted
after they were created (`deliveries.py`). Projects, team, job types, webhooks and the compact
project histories are built eagerly; jobs and delivery-log entries (hundreds of thousands at
`large`) are pure functions of (seed, index) built lazily by the store, so only their ordering
keys live in memory. The rules the data obeys are listed in docs/simulator-data.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import date
from typing import Any

from .catalog import (
    CUSTOM_JOB_TYPES,
    FIRST_NAMES,
    LAST_NAMES,
    PREDEFINED_JOB_TYPES,
    TITLES,
    WEBHOOK_NAMES,
)
from .deliveries import (
    CREATED,
    UPDATED,
    EventStream,
    LazyLog,
    build_log,
    log_keys,
    subscription_start,
)
from .history import expand
from .jobs import CustomType, JobMaker, LazyJob
from .seeded import DAY_MS, date_ms, hex_id, row_rng
from .timeline import Planner, ProjectPlan, Version, record

STAFF_ROLES = ("root", "project_manager", "ops_lead")
# share of extra projects that were deleted before the anchor: only their deliveries remain
DELETED_SHARE = 0.03
# webhooks are created a little before the deliveries they must log (5% of them earlier)
EVENT_MARGIN = 1.05


@dataclass(frozen=True)
class Counts:
    """How many rows of each kind a scale generates."""

    projects: int
    jobs_per_project: int
    members: int
    webhooks: int
    logs_per_webhook: int
    custom_job_types: int


SCALES: dict[str, Counts] = {
    "tiny": Counts(5, 4, 8, 1, 30, 2),
    "small": Counts(60, 10, 25, 2, 500, 4),
    "large": Counts(20_000, 20, 200, 5, 100_000, 10),
}


def anchor_ms(anchor: date) -> int:
    """Midnight UTC of the anchor date in ms; generated timestamps lie before it."""
    return date_ms(anchor)


def _ascii(s: str) -> str:
    table = str.maketrans(
        {"ö": "o", "ë": "e", "é": "e", "ł": "l", "Ł": "L", "í": "i", "ü": "u", "'": ""}
    )
    return s.translate(table).encode("ascii", "ignore").decode().lower()


def spread(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights` (largest remainders first), summing exactly."""
    if total <= 0 or not weights:
        return [0] * len(weights)
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    rest = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[:rest]:
        shares[i] += 1
    return shares


def event_types_of(w: int) -> list[str]:
    """Every third webhook subscribes to updates only."""
    return [CREATED, UPDATED] if w % 3 != 2 else [UPDATED]


class Generator:
    """Builds the initial workspace for one seed/scale/anchor."""

    def __init__(self, seed: int, counts: Counts, anchor: date) -> None:
        self.seed = seed
        self.counts = counts
        self.anchor = anchor
        self.end_ms = anchor_ms(anchor) - 1
        self.start_ms = self.end_ms - 730 * DAY_MS
        rng = random.Random(f"{seed}:workspace")
        self.workspace_id = hex_id(rng, "ws_", 48)
        self.api_key_creator = {
            "id": hex_id(rng, "apikey_", 48),
            "type": "api_key",
            "name": "Ops integration key",
        }
        self.team: list[dict[str, Any]] = []
        self.job_types: list[tuple[int, dict[str, Any]]] = []
        self.projects: list[dict[str, Any]] = []
        self.plans: list[ProjectPlan] = []
        self.histories: list[list[Version]] = []
        self.stream = EventStream([])
        self._custom: list[CustomType] = []
        self._jobs = JobMaker(seed, anchor, self.end_ms, self._custom)

    # -- team --------------------------------------------------------------------------------
    def build_team(self) -> list[dict[str, Any]]:
        """Members joined over the window's first half year; the root set the workspace up
        two months before it, so every project and webhook has a creator who had joined."""
        n = self.counts.members
        roles_cycle = ("pilot", "pilot", "ops_lead", "pilot", "client", "project_manager", "pilot")
        span = 180 * DAY_MS
        for i in range(n):
            rng = row_rng(self.seed, "member", i)
            role = "root" if i == 0 else roles_cycle[(i - 1) % len(roles_cycle)]
            first = FIRST_NAMES[rng.randrange(len(FIRST_NAMES))]
            last = LAST_NAMES[rng.randrange(len(LAST_NAMES))]
            created = self.start_ms + (i * span) // max(n, 1) + rng.randrange(span // max(n, 1))
            if i == 0:
                created -= 60 * DAY_MS
            uid = hex_id(rng, "usr_")
            domain = "client-utility.example" if role == "client" else "skyops.example"
            invited = role == "client" and i % 3 == 1
            member = {
                "id": uid,
                "email": f"{_ascii(first)}.{_ascii(last)}{i}@{domain}",
                "first_name": None if invited else first,
                "last_name": None if invited else last,
                "role": role,
                "status": "invited" if invited else "active",
                "title": None if role == "client" and i % 2 else TITLES[role],
                "phone_number": None
                if rng.random() < 0.3
                else f"+1-555-{rng.randrange(10000):04d}",
                "profile_picture": None
                if rng.random() < 0.4
                else f"https://cdn.skyops.example/avatars/{uid}.png",
                "created": created,
                "updated": created + rng.randrange(max(self.end_ms - created, 1)) // 3,
            }
            self.team.append(member)
        return self.team

    def _staff(self) -> list[tuple[int, dict[str, Any]]]:
        """(joined, creator) of the members who create projects and webhooks."""
        return [
            (
                m["created"],
                {
                    "id": m["id"],
                    "email": m["email"],
                    "first_name": m["first_name"] or "",
                    "last_name": m["last_name"] or "",
                    "profile_picture": m["profile_picture"],
                },
            )
            for m in self.team
            if m["role"] in STAFF_ROLES
        ]

    # -- job types ---------------------------------------------------------------------------
    def build_job_types(self) -> list[tuple[int, dict[str, Any]]]:
        base = self.start_ms - 30 * DAY_MS
        for i, (tid, name, icon) in enumerate(PREDEFINED_JOB_TYPES):
            self.job_types.append(
                (base + i, {"id": tid, "name": name, "icon": icon, "is_predefined": True})
            )
        for i in range(self.counts.custom_job_types):
            rng = row_rng(self.seed, "jobtype", i)
            name, icon, kinds, tasks = CUSTOM_JOB_TYPES[i % len(CUSTOM_JOB_TYPES)]
            if i >= len(CUSTOM_JOB_TYPES):
                name = f"{name} {i // len(CUSTOM_JOB_TYPES) + 1}"
            created = self.start_ms + rng.randrange(700 * DAY_MS)
            type_id = hex_id(rng, "jt_")
            jt = {"id": type_id, "name": name, "icon": icon, "is_predefined": False}
            self.job_types.append((created, jt))
            self._custom.append(CustomType(type_id, created, kinds, tasks))
        return self.job_types

    # -- projects ----------------------------------------------------------------------------
    def build_projects(self) -> list[dict[str, Any]]:
        """Plan every project (deleted ones too), give each its share of updates, expand the
        histories and index their events; returns the visible projects as they are now."""
        n = self.counts.projects
        deleted = round(n * DELETED_SHARE)
        staff = self._staff()
        if not staff:
            raise ValueError("a workspace needs at least one team member (its root)")
        planner = Planner(self.seed, n, self.start_ms, self.end_ms, staff, self.api_key_creator)
        self.plans = [planner.plan(i) for i in range(n + deleted)]
        minimum = [p.min_updates for p in self.plans]
        target = max(math.ceil(self._updates_needed() * EVENT_MARGIN), sum(minimum) + len(minimum))
        extra = spread(target - sum(minimum), [p.weight for p in self.plans])
        self.histories = [
            expand(p, m + x, self.seed) for p, m, x in zip(self.plans, minimum, extra, strict=True)
        ]
        self.stream = EventStream(self.histories)
        self.projects = [
            record(p, h[-1]) for p, h in zip(self.plans, self.histories[:n], strict=False)
        ]
        return self.projects

    def _updates_needed(self) -> int:
        """Updates the histories must hold so every webhook has its number of deliveries."""
        n = self.counts.logs_per_webhook
        created = len(self.plans)
        need = 0
        for w in range(self.counts.webhooks):
            types = event_types_of(w)
            need = max(need, n - created if CREATED in types else n)
        return need

    # -- jobs --------------------------------------------------------------------------------
    def job_keys(self) -> list[tuple[str, LazyJob]]:
        """Ids and ordering keys of every generated job, grouped by project in created order.

        The counts and ids are drawn exactly as before histories were simulated (so a seed's
        job counts, and the benchmark's page counts, are unchanged); each drawn creation time
        is then scaled into the window in which its project was open for work.
        """
        rng = random.Random(f"{self.seed}:jobkeys")
        avg = self.counts.jobs_per_project
        out: list[tuple[str, LazyJob]] = []
        idx = 0
        for pi, p in enumerate(self.projects):
            k = avg if avg <= 1 else rng.randrange(avg // 2, avg + avg // 2 + 1)
            if self.counts.projects <= 10:
                k = avg
            lo = p["created"]
            span = max(min(self.end_ms, lo + 400 * DAY_MS) - lo, k + 1)
            window = self.plans[pi].work_end - lo
            times = sorted(lo + rng.randrange(span) for _ in range(k))
            for t in times:
                jid = f"job_{rng.getrandbits(64):016x}"
                out.append((jid, LazyJob(idx, pi, p["id"], lo + (t - lo) * window // span)))
                idx += 1
        return out

    def job(self, key: LazyJob, job_id: str) -> dict[str, Any]:
        """Full record of a generated job (pure in seed, index and key)."""
        return self._jobs.build(key, job_id, self.plans[key.project_index])

    # -- webhooks and logs -------------------------------------------------------------------
    def webhooks(self) -> list[tuple[dict[str, Any], list[tuple[str, LazyLog]]]]:
        """Each webhook with the ids and ordering keys of its log entries, oldest first.

        A webhook is created (by a staff member who had joined) just before the events it
        logged; the number of those is the scale's deliveries per webhook.
        """
        out = []
        staff = self._staff()
        for w in range(self.counts.webhooks):
            rng = row_rng(self.seed, "webhook", w)
            event_types = event_types_of(w)
            matching = self.stream.matching(event_types)
            earliest = self.end_ms - rng.randrange(30 * DAY_MS)
            created, delivered = subscription_start(
                self.stream, matching, self.counts.logs_per_webhook, rng, earliest
            )
            joined = [s for s in staff if s[0] <= created] or staff[:1]
            creator = joined[rng.randrange(len(joined))][1]
            suffix = f" {w // len(WEBHOOK_NAMES) + 1}" if w >= len(WEBHOOK_NAMES) else ""
            wh = {
                "id": hex_id(rng, "wh_"),
                "name": WEBHOOK_NAMES[w % len(WEBHOOK_NAMES)] + suffix,
                "url": f"https://hooks.partner-{w}.example/drone-ops/{rng.getrandbits(32):08x}",
                "event_types": event_types,
                "status": "active",
                "failure_count": 0,
                "created": created,
                "updated": created,
                "created_by": {k: creator[k] for k in ("id", "email", "first_name", "last_name")},
                "last_triggered_at": None,
            }
            keys = log_keys(self.stream, delivered, self.seed, w, self.end_ms)
            out.append((wh, keys))
        return out

    def log(self, key: LazyLog, log_id: str, webhook: dict[str, Any]) -> dict[str, Any]:
        """Full record of a generated delivery-log entry."""
        return build_log(
            key,
            log_id,
            webhook,
            self.stream,
            self.plans,
            self.histories,
            self.seed,
            self.workspace_id,
        )
