"""Deterministic, seeded workspace content.

Same seed + scale + anchor date give byte-identical API responses. Projects, team, job types and
webhooks are built eagerly; jobs and delivery-log entries (hundreds of thousands at `large`) are
pure functions of (seed, index) and are built lazily by the store, so only their ordering keys
live in memory.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson

from .validation import CAPTURE_TYPES, STATUSES

DAY_MS = 86_400_000


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

PREDEFINED_JOB_TYPES: tuple[tuple[str, str, str], ...] = (
    ("drone_inspection", "Drone Inspection", "plane"),
    ("thermal_inspection", "Thermal Inspection", "thermometer"),
    ("3d_mapping", "3D Mapping", "box"),
    ("wind_turbine", "Wind Turbine", "wind"),
    ("cell_tower", "Cell Tower", "radio"),
    ("solar_farm", "Solar Farm", "sun"),
    ("bridge_inspection", "Bridge Inspection", "construction"),
    ("roof_inspection", "Roof Inspection", "home"),
    ("power_line", "Power Line", "zap"),
    ("construction_progress", "Construction Progress", "hammer"),
    ("data_center", "Data Center", "database"),
    ("traffic_survey", "Traffic Survey", "traffic-cone"),
    ("other", "Other", "settings"),
)
CUSTOM_JOB_TYPES: tuple[tuple[str, str], ...] = (
    ("Blade Leading-Edge Survey", "fan"),
    ("Substation Thermal Sweep", "flame"),
    ("Pipeline Right-of-Way", "route"),
    ("Stockpile Volumetrics", "mountain"),
    ("Façade Crack Mapping", "building-2"),
    ("Telecom Antenna Audit", "antenna"),
    ("Flood Damage Assessment", "waves"),
    ("Rail Corridor Patrol", "train-front"),
    ("Dam Spillway Check", "droplets"),
    ("Crop Health NDVI", "sprout"),
)

SITES: tuple[tuple[str, str, float, float, tuple[str, ...]], ...] = (
    # (asset kind, name pattern, lat, lon, suitable job types)
    ("Wind Farm", "{place} Wind Farm", 55.2, -1.6, ("wind_turbine", "thermal_inspection")),
    ("Offshore Wind", "{place} Offshore Array", 53.9, 1.9, ("wind_turbine", "drone_inspection")),
    ("Cell Tower", "{place} Cell Site {n}", 40.7, -74.0, ("cell_tower", "3d_mapping")),
    ("Solar Site", "{place} Solar Park", 35.1, -117.9, ("solar_farm", "thermal_inspection")),
    ("Bridge", "{place} Bridge", 47.6, -122.3, ("bridge_inspection", "3d_mapping")),
    ("Power Line", "{place} 132kV Line", 51.5, -0.9, ("power_line", "drone_inspection")),
    ("Rooftop", "{place} Distribution Centre Roof", 52.4, 13.2, ("roof_inspection",)),
    ("Construction", "{place} Tower Block", 48.8, 2.3, ("construction_progress", "3d_mapping")),
)
PLACES = (
    "Hornsea",
    "Whitelee",
    "Mojave",
    "Kings Cross",
    "Tappan Zee",
    "Øresund",
    "São Gonçalo",
    "Zürich Nord",
    "Kraków Południe",
    "Ashby",
    "Clyde",
    "Blackwater",
    "Red Rock",
    "Pine Ridge",
    "Lakeview",
    "Harbour Point",
    "Cedar Hill",
    "Ebro Delta",
    "Nordsee Ost",
    "Gansu",
)
INSPECTIONS = (
    "Annual Inspection",
    "Blade Survey",
    "Thermal Audit",
    "Structural Assessment",
    "Quarterly Monitoring",
    "Progress Capture",
    "Post-Storm Check",
    "Baseline Survey",
)
FIRST_NAMES = (
    "Ava",
    "Liam",
    "Sofia",
    "Noah",
    "Zoë",
    "Mateo",
    "Chloé",
    "Łukasz",
    "Aisha",
    "Kenji",
    "Ingrid",
    "Diego",
    "Priya",
    "Oliver",
    "Fatima",
    "Mei",
    "Jonas",
    "Amara",
    "Björn",
    "Elena",
)
LAST_NAMES = (
    "Walker",
    "Nakamura",
    "García",
    "Okafor",
    "Müller",
    "Kowalski",
    "Singh",
    "O'Brien",
    "Rossi",
    "Haddad",
    "Johansson",
    "Nguyen",
    "Silva",
    "Dubois",
    "Kim",
    "Novak",
)
TITLES = {
    "root": "Head of Drone Operations",
    "project_manager": "Project Manager",
    "ops_lead": "Operations Lead",
    "pilot": "Remote Pilot",
    "client": "Asset Owner",
}
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
_STATUS_POP = [s for s, w in STATUS_WEIGHTS for _ in range(w)]
assert {s for s, _ in STATUS_WEIGHTS} == set(STATUSES)
OTHER_REASONS = (
    "Awaiting landowner access agreement",
    "Client requested re-scope after storm damage",
    "NOTAM in effect around the site",
    "Waiting for replacement thermal camera",
)
JOB_WORDS = (
    "blade survey",
    "thermal sweep",
    "orthomosaic capture",
    "antenna alignment check",
    "deck underside inspection",
    "panel hotspot scan",
    "progress flight",
    "volumetric survey",
    "corrosion check",
    "lidar corridor scan",
)
NOTES = (
    "Fly at 40 m AGL; keep 15 m standoff from structures.",
    "Site contact must be on the ground before take-off.",
    "Capture every blade at 3 positions: root, mid, tip.",
    "Thermal only between 10:00 and 14:00 local time, clear sky required.",
    "Use the north gate; access code is with the ops lead.",
)
LONG_DESCRIPTION = (
    "Multi-phase inspection programme covering structural condition, thermal anomalies and "
    "vegetation encroachment. "
)


def anchor_ms(anchor: date) -> int:
    """Midnight UTC of the anchor date in ms; generated timestamps lie before it."""
    return int(datetime(anchor.year, anchor.month, anchor.day, tzinfo=UTC).timestamp()) * 1000


def ms_to_date(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date()


def row_rng(seed: int, kind: str, index: int) -> random.Random:
    """An independent RNG per row, so lazy rows don't depend on generation order."""
    return random.Random(f"{seed}:{kind}:{index}")


def hex_id(rng: random.Random, prefix: str, bits: int = 64) -> str:
    return f"{prefix}{rng.getrandbits(bits):0{bits // 4}x}"


def _ascii(s: str) -> str:
    table = str.maketrans(
        {"ö": "o", "ë": "e", "é": "e", "ł": "l", "Ł": "L", "í": "i", "ü": "u", "'": ""}
    )
    return s.translate(table).encode("ascii", "ignore").decode().lower()


def _exact_length(text: str, n: int) -> str:
    return (text * (n // len(text) + 1))[:n]


@dataclass(slots=True)
class LazyJob:
    """Ordering key and parentage of a job whose content is built on first read."""

    index: int
    project_index: int
    project_id: str
    created: int


@dataclass(slots=True)
class LazyLog:
    """Ordering key of a delivery-log entry whose content is built on first read."""

    index: int
    webhook_index: int
    created: int
    failed: bool


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
        self.project_ids: list[str] = []
        self.project_sites: dict[int, int] = {}
        self._custom_types: list[str] = []

    # -- team --------------------------------------------------------------------------------
    def build_team(self) -> list[dict[str, Any]]:
        n = self.counts.members
        roles_cycle = ("pilot", "pilot", "ops_lead", "pilot", "client", "project_manager", "pilot")
        span = 180 * DAY_MS
        for i in range(n):
            rng = row_rng(self.seed, "member", i)
            role = "root" if i == 0 else roles_cycle[(i - 1) % len(roles_cycle)]
            first = FIRST_NAMES[rng.randrange(len(FIRST_NAMES))]
            last = LAST_NAMES[rng.randrange(len(LAST_NAMES))]
            created = self.start_ms + (i * span) // max(n, 1) + rng.randrange(span // max(n, 1))
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

    def _creator(self, rng: random.Random) -> dict[str, Any]:
        staff = [m for m in self.team if m["role"] in ("root", "project_manager", "ops_lead")]
        m = staff[rng.randrange(len(staff))] if staff else self.team[0]
        return {
            "id": m["id"],
            "email": m["email"],
            "first_name": m["first_name"] or "",
            "last_name": m["last_name"] or "",
            "profile_picture": m["profile_picture"],
        }

    # -- job types ---------------------------------------------------------------------------
    def build_job_types(self) -> list[tuple[int, dict[str, Any]]]:
        base = self.start_ms - 30 * DAY_MS
        for i, (tid, name, icon) in enumerate(PREDEFINED_JOB_TYPES):
            self.job_types.append(
                (base + i, {"id": tid, "name": name, "icon": icon, "is_predefined": True})
            )
        for i in range(self.counts.custom_job_types):
            rng = row_rng(self.seed, "jobtype", i)
            name, icon = CUSTOM_JOB_TYPES[i % len(CUSTOM_JOB_TYPES)]
            if i >= len(CUSTOM_JOB_TYPES):
                name = f"{name} {i // len(CUSTOM_JOB_TYPES) + 1}"
            created = self.start_ms + rng.randrange(700 * DAY_MS)
            type_id = hex_id(rng, "jt_")
            jt = {"id": type_id, "name": name, "icon": icon, "is_predefined": False}
            self.job_types.append((created, jt))
            self._custom_types.append(type_id)
        return self.job_types

    # -- projects ----------------------------------------------------------------------------
    def project(self, i: int) -> dict[str, Any]:
        """Project `i` as generated (pure in seed and index, given the team)."""
        n = self.counts.projects
        rng = row_rng(self.seed, "project", i)
        step = (self.end_ms - self.start_ms - DAY_MS) // max(n, 1)
        created = self.start_ms + i * step + rng.randrange(max(step, 1))
        site_index = rng.randrange(len(SITES))
        kind, pattern, _, _, _ = SITES[site_index]
        place = PLACES[rng.randrange(len(PLACES))]
        site = pattern.format(place=place, n=rng.randrange(100, 999))
        name = f"{site} — {INSPECTIONS[rng.randrange(len(INSPECTIONS))]} {ms_to_date(created).year}"
        description = (
            f"{kind} inspection programme for {site}. Deliverables: annotated imagery, "
            f"defect register and a summary report for the asset owner."
        )
        status = _STATUS_POP[rng.randrange(len(_STATUS_POP))]
        start = ms_to_date(created) + timedelta(days=rng.randrange(-10, 60))
        end: date | None = start + timedelta(days=rng.randrange(1, 365))
        if rng.random() < 0.25:
            end = None
        archived = rng.random() < 0.06
        creator: dict[str, Any] | None = self._creator(rng)
        r = rng.random()
        if r < 0.08:
            creator = dict(self.api_key_creator)
        elif r < 0.1:
            creator = None
        # edge rows at fixed small indices so that even `tiny` has them
        if i == 0:
            creator = dict(self.api_key_creator)
        elif i == 1:
            archived = True
        elif i == 2:
            status = "other"
        elif i == 3:
            end = None
            description = "Überprüfung der Rotorblätter — 風力発電所の点検 🚁 (ünïcødé test)"
        elif i == 4:
            description = _exact_length(LONG_DESCRIPTION, 1000)
        updated = created + rng.randrange(max(self.end_ms - created, 1))
        if rng.random() < 0.3:
            updated = created
        self.project_sites[i] = site_index
        return {
            "id": hex_id(rng, "prj_"),
            "name": name[:100],
            "description": description,
            "status": status,
            "start_date": start.isoformat(),
            "end_date": end.isoformat() if end else None,
            "created": created,
            "updated": updated,
            "archived": archived,
            "external_id": f"CRM-{rng.randrange(10000, 99999)}" if rng.random() < 0.6 else None,
            "laanc_number": f"LAANC-{rng.randrange(10**7):07d}" if rng.random() < 0.3 else None,
            "created_by": creator,
            "other_status_reason": OTHER_REASONS[rng.randrange(len(OTHER_REASONS))]
            if status == "other"
            else None,
        }

    def build_projects(self) -> list[dict[str, Any]]:
        self.projects = [self.project(i) for i in range(self.counts.projects)]
        self.project_ids = [p["id"] for p in self.projects]
        return self.projects

    # -- jobs --------------------------------------------------------------------------------
    def job_keys(self) -> list[tuple[str, LazyJob]]:
        """Ids and ordering keys of every generated job, grouped by project in created order."""
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
            times = sorted(lo + rng.randrange(span) for _ in range(k))
            for t in times:
                jid = f"job_{rng.getrandbits(64):016x}"
                out.append((jid, LazyJob(idx, pi, p["id"], t)))
                idx += 1
        return out

    def job(self, key: LazyJob, job_id: str) -> dict[str, Any]:
        """Full record of a generated job (pure in seed, index and key)."""
        rng = row_rng(self.seed, "job", key.index)
        site = SITES[self.project_sites[key.project_index]]
        types = site[4]
        custom = self._custom_types
        if custom and rng.random() < 0.15:
            jtype = custom[rng.randrange(len(custom))]
        else:
            jtype = types[rng.randrange(len(types))]
        created = key.created
        status = _STATUS_POP[rng.randrange(len(_STATUS_POP))]
        start = ms_to_date(created) + timedelta(days=rng.randrange(0, 45))
        end: date | None = start + timedelta(days=rng.randrange(0, 180))
        if rng.random() < 0.3:
            end = None
        recurring = rng.random() < 0.4
        rec: dict[str, Any] = dict.fromkeys(
            (
                "recurring_frequency",
                "recurring_interval",
                "selected_days_of_week",
                "week_of_month",
                "weeks_of_month",
                "flights_per_occurrence",
            )
        )
        if recurring:
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
        has_coords = rng.random() < 0.88
        lat = round(site[2] + rng.uniform(-2, 2), 6) if has_coords else None
        lon = round(site[3] + rng.uniform(-2, 2), 6) if has_coords else None
        words = JOB_WORDS[rng.randrange(len(JOB_WORDS))]
        updated = created if rng.random() < 0.4 else created + rng.randrange(30 * DAY_MS)
        updated = min(max(updated, created), max(self.end_ms, created))
        row = {
            "id": job_id,
            "name": f"{words.capitalize()} #{key.index % 1000 + 1}",
            "description": None
            if rng.random() < 0.3
            else f"{words.capitalize()} for asset group {rng.randrange(1, 40)}.",
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
            "capture_types": rng.sample(CAPTURE_TYPES, rng.randrange(1, 4)),
            "external_id": f"WO-{rng.randrange(10**6):06d}" if rng.random() < 0.5 else None,
            "created": created,
            "updated": updated,
            "other_status_reason": OTHER_REASONS[rng.randrange(len(OTHER_REASONS))]
            if status == "other"
            else None,
        }
        row.update(rec)
        return row

    # -- webhooks and logs -------------------------------------------------------------------
    def webhooks(self) -> list[dict[str, Any]]:
        out = []
        names = ("BI warehouse sync", "Ops Slack relay", "CRM status bridge", "Audit archive")
        for w in range(self.counts.webhooks):
            rng = row_rng(self.seed, "webhook", w)
            created = self.start_ms + rng.randrange(30 * DAY_MS)
            creator: dict[str, Any]
            if w == 0:
                creator = dict(self.api_key_creator)
            else:
                m = self._creator(rng)
                creator = {k: m[k] for k in ("id", "email", "first_name", "last_name")}
            event_types = (
                ["project.created", "project.updated"] if w % 3 != 2 else ["project.updated"]
            )
            out.append(
                {
                    "id": hex_id(rng, "wh_"),
                    "name": names[w % len(names)] + (f" {w // len(names) + 1}" if w >= 4 else ""),
                    "url": f"https://hooks.partner-{w}.example/drone-ops/{rng.getrandbits(32):08x}",
                    "event_types": event_types,
                    "status": "active",
                    "failure_count": 0,
                    "created": created,
                    "updated": created,
                    "created_by": creator,
                    "last_triggered_at": None,
                }
            )
        return out

    def log_keys(self, w: int, webhook: dict[str, Any]) -> list[tuple[str, LazyLog]]:
        """Ids and ordering keys of a webhook's generated log entries, oldest first."""
        rng = random.Random(f"{self.seed}:logkeys:{w}")
        n = self.counts.logs_per_webhook
        lo = webhook["created"] + DAY_MS
        step = max((self.end_ms - lo) // max(n, 1), 1)
        out = []
        for i in range(n):
            t = lo + i * step + int(rng.random() * step)
            out.append((f"whl_{rng.getrandbits(64):016x}", LazyLog(i, w, t, rng.random() < 0.04)))
        return out

    def log(self, key: LazyLog, log_id: str, webhook: dict[str, Any]) -> dict[str, Any]:
        """Full record of a generated delivery-log entry."""
        rng = row_rng(self.seed, f"log{key.webhook_index}", key.index)
        events = webhook["event_types"]
        event = events[rng.randrange(len(events))]
        pi = rng.randrange(max(self.counts.projects, 1))
        data = self.projects[pi] if self.projects else {}
        payload = {
            "delivery_id": hex_id(rng, "dlv_"),
            "event": event,
            "timestamp": key.created,
            "workspace_id": self.workspace_id,
            "data": data,
        }
        if key.failed:
            kind = rng.randrange(3)
            status, body, err = (
                (500, "Internal Server Error", "Receiver responded with HTTP 500"),
                (0, "", "Timed out after 2000 ms"),
                (404, "Not Found", "Receiver responded with HTTP 404"),
            )[kind]
        else:
            status, body, err = 200, '{"ok":true}', None
        return {
            "id": log_id,
            "event_type": event,
            "url": webhook["url"],
            "status": "failed" if key.failed else "success",
            "response_status": status,
            "response_body": body,
            "request_payload": orjson.dumps(payload).decode(),
            "duration_ms": 2000 if status == 0 else 40 + rng.randrange(400),
            "error_message": err,
            "created": key.created,
        }


WEEK_CHOICES = [1, 2, 3, 4, -1]
