"""The generated workspace's vocabulary: places, kinds of site, job types and their tasks.

Everything here is data, so that the names the generator writes agree with the rest of a row:
a place has real coordinates and hosts only the kinds of site that exist there, a kind of site
is served by the job types that inspect it, and a job type's tasks name the capture types they
need. `tests/simulator/test_story.py` checks generated rows against these tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules import CAPTURE_TYPES


@dataclass(frozen=True)
class SiteKind:
    """A kind of asset a project inspects."""

    label: str
    name_pattern: str
    job_types: tuple[str, ...]
    # how far the asset lies from its place's reference point, and how far a job's flight
    # point lies from the asset (long, thin assets spread further)
    site_km: float
    job_km: float


@dataclass(frozen=True)
class Place:
    """A named place with its real coordinates and the kinds of site found there."""

    name: str
    lat: float
    lon: float
    kinds: tuple[int, ...]


@dataclass(frozen=True)
class Task:
    """What a job of some type does: its name, and the capture types that name implies."""

    name: str
    captures: tuple[str, ...]


# Indices into SITE_KINDS; the order is part of the seeded draw sequence (see timeline.py).
WIND, OFFSHORE, CELL, SOLAR, BRIDGE, POWER, ROOF, BUILD = range(8)

SITE_KINDS: tuple[SiteKind, ...] = (
    SiteKind(
        "Wind Farm",
        "{place} Wind Farm",
        ("wind_turbine", "thermal_inspection", "drone_inspection"),
        15,
        3,
    ),
    SiteKind(
        "Offshore Wind", "{place} Offshore Array", ("wind_turbine", "drone_inspection"), 40, 5
    ),
    SiteKind("Cell Tower", "{place} Cell Site {n}", ("cell_tower", "3d_mapping"), 8, 0.5),
    SiteKind("Solar Site", "{place} Solar Park", ("solar_farm", "thermal_inspection"), 12, 1.5),
    SiteKind("Bridge", "{place} Bridge", ("bridge_inspection", "3d_mapping"), 3, 0.8),
    SiteKind(
        "Power Line",
        "{place} 132kV Line",
        ("power_line", "drone_inspection", "thermal_inspection"),
        20,
        12,
    ),
    SiteKind(
        "Rooftop",
        "{place} Distribution Centre Roof",
        ("roof_inspection", "thermal_inspection"),
        6,
        0.3,
    ),
    SiteKind(
        "Construction", "{place} Tower Block", ("construction_progress", "3d_mapping"), 3, 0.3
    ),
)

# Twenty places (the count is part of the seeded draw sequence); coordinates are the real
# ones, rounded, and each place lists only the kinds of site that are found there.
PLACES: tuple[Place, ...] = (
    Place("Hornsea", 53.91, -0.17, (OFFSHORE, CELL, POWER, ROOF)),
    Place("Whitelee", 55.68, -4.27, (WIND, POWER)),
    Place("Mojave", 35.05, -118.17, (SOLAR, WIND, POWER, CELL, ROOF)),
    Place("Kings Cross", 51.53, -0.12, (BUILD, ROOF, CELL)),
    Place("Tappan Zee", 41.07, -73.88, (BRIDGE, CELL, POWER)),
    Place("Øresund", 55.58, 12.83, (BRIDGE, OFFSHORE)),
    Place("São Gonçalo", -22.83, -43.05, (BUILD, ROOF, CELL, SOLAR)),
    Place("Zürich Nord", 47.41, 8.55, (BUILD, ROOF, CELL)),
    Place("Kraków Południe", 50.02, 19.95, (BUILD, ROOF, CELL, POWER)),
    Place("Ashby", 52.75, -1.47, (SOLAR, POWER, ROOF, WIND)),
    Place("Clyde", 55.86, -4.29, (BRIDGE, BUILD, ROOF)),
    Place("Blackwater", 51.73, 0.85, (SOLAR, POWER, OFFSHORE)),
    Place("Red Rock", 36.13, -115.43, (SOLAR, CELL, POWER)),
    Place("Pine Ridge", 43.03, -102.55, (WIND, POWER, CELL, SOLAR)),
    Place("Lakeview", 42.19, -120.35, (WIND, SOLAR, POWER, CELL)),
    Place("Harbour Point", 41.04, -73.54, (BUILD, ROOF, CELL)),
    Place("Cedar Hill", 32.59, -96.95, (CELL, POWER, ROOF, SOLAR, WIND)),
    Place("Ebro Delta", 40.70, 0.75, (WIND, SOLAR, OFFSHORE, BRIDGE)),
    Place("Nordsee Ost", 54.43, 7.68, (OFFSHORE,)),
    Place("Gansu", 40.20, 97.00, (WIND, SOLAR, POWER)),
)
PLACES_OF_KIND: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, place in enumerate(PLACES) if k in place.kinds) for k in range(len(SITE_KINDS))
)

# Eight programme names (the count is part of the seeded draw sequence), fit for any asset.
PROGRAMMES = (
    "Annual Inspection",
    "Condition Survey",
    "Structural Assessment",
    "Quarterly Monitoring",
    "Asset Health Review",
    "Post-Storm Check",
    "Baseline Survey",
    "Compliance Audit",
)

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

# Custom job types: name, icon, the kinds of site they serve, their tasks.
CUSTOM_JOB_TYPES: tuple[tuple[str, str, tuple[int, ...], tuple[Task, ...]], ...] = (
    (
        "Blade Leading-Edge Survey",
        "fan",
        (WIND, OFFSHORE),
        (Task("Leading-edge erosion survey", ("drone_inspection",)),),
    ),
    (
        "Substation Thermal Sweep",
        "flame",
        (POWER, SOLAR, WIND),
        (Task("Substation thermal sweep", ("thermal_inspection",)),),
    ),
    (
        "Pipeline Right-of-Way",
        "route",
        (POWER, BUILD),
        (Task("Right-of-way video patrol", ("video_capture", "drone_inspection")),),
    ),
    (
        "Stockpile Volumetrics",
        "mountain",
        (BUILD,),
        (Task("Stockpile volumetric survey", ("3d_mapping", "lidar_scan")),),
    ),
    (
        "Façade Crack Mapping",
        "building-2",
        (BUILD, ROOF, BRIDGE),
        (Task("Façade crack mapping", ("drone_inspection", "3d_mapping")),),
    ),
    (
        "Telecom Antenna Audit",
        "antenna",
        (CELL,),
        (Task("Antenna 360 audit", ("drone_inspection", "ground_360")),),
    ),
    (
        "Flood Damage Assessment",
        "waves",
        (BRIDGE, BUILD, SOLAR, ROOF),
        (Task("Flood damage orthomosaic", ("orthomosaic",)),),
    ),
    (
        "Rail Corridor Patrol",
        "train-front",
        (BRIDGE, POWER),
        (Task("Rail corridor video patrol", ("video_capture",)),),
    ),
    (
        "Dam Spillway Check",
        "droplets",
        (BRIDGE,),
        (Task("Spillway visual inspection", ("drone_inspection",)),),
    ),
    (
        "Crop Health NDVI",
        "sprout",
        (SOLAR, WIND),
        (Task("NDVI orthomosaic", ("orthomosaic",)),),
    ),
)

TASKS: dict[str, tuple[Task, ...]] = {
    "drone_inspection": (
        Task("Visual inspection", ("drone_inspection",)),
        Task("Video walkaround", ("drone_inspection", "video_capture")),
        Task("Panorama survey", ("drone_inspection", "panorama")),
    ),
    "thermal_inspection": (
        Task("Thermal sweep", ("thermal_inspection",)),
        Task("Thermal hotspot scan", ("thermal_inspection",)),
    ),
    "3d_mapping": (
        Task("3D model capture", ("3d_mapping",)),
        Task("Orthomosaic capture", ("3d_mapping", "orthomosaic")),
        Task("Lidar scan", ("3d_mapping", "lidar_scan")),
    ),
    "wind_turbine": (
        Task("Blade survey", ("drone_inspection",)),
        Task("Blade thermal sweep", ("thermal_inspection",)),
        Task("Tower lidar scan", ("lidar_scan",)),
    ),
    "cell_tower": (
        Task("Antenna alignment check", ("drone_inspection",)),
        Task("Tower 3D capture", ("3d_mapping",)),
        Task("Ground 360 survey", ("ground_360",)),
    ),
    "solar_farm": (
        Task("Panel thermal hotspot scan", ("thermal_inspection",)),
        Task("Array orthomosaic", ("orthomosaic",)),
    ),
    "bridge_inspection": (
        Task("Deck underside inspection", ("drone_inspection",)),
        Task("Bearing video survey", ("video_capture",)),
        Task("Structure lidar scan", ("lidar_scan",)),
    ),
    "roof_inspection": (
        Task("Roof condition survey", ("drone_inspection",)),
        Task("Roof thermal sweep", ("thermal_inspection",)),
        Task("Roof orthomosaic", ("orthomosaic",)),
    ),
    "power_line": (
        Task("Corridor video patrol", ("drone_inspection", "video_capture")),
        Task("Lidar corridor scan", ("lidar_scan",)),
        Task("Insulator thermal sweep", ("thermal_inspection",)),
    ),
    "construction_progress": (
        Task("Progress flight", ("drone_inspection",)),
        Task("Volumetric survey", ("3d_mapping",)),
        Task("Site orthomosaic", ("orthomosaic",)),
        Task("Site panorama", ("panorama",)),
    ),
}
# Capture types any task may add to the ones its name implies.
EXTRA_CAPTURES = ("ground_smartphone", "drone_inspection")
assert all(c in CAPTURE_TYPES for tasks in TASKS.values() for t in tasks for c in t.captures)

# Words in a job's name and the capture type each implies (the rule the tests check).
NAME_CAPTURES: tuple[tuple[str, str], ...] = (
    ("thermal", "thermal_inspection"),
    ("lidar", "lidar_scan"),
    ("orthomosaic", "orthomosaic"),
    ("video", "video_capture"),
    ("panorama", "panorama"),
    ("360", "ground_360"),
    ("3d", "3d_mapping"),
    ("volumetric", "3d_mapping"),
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
OTHER_REASONS = (
    "Awaiting landowner access agreement",
    "Client requested re-scope after storm damage",
    "NOTAM in effect around the site",
    "Waiting for replacement thermal camera",
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
UNICODE_DESCRIPTION = "Überprüfung der Rotorblätter — 風力発電所の点検 🚁 (ünïcødé test)"
WEBHOOK_NAMES = ("BI warehouse sync", "Ops Slack relay", "CRM status bridge", "Audit archive")
