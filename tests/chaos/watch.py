"""Choosing a kill moment from outside the process: dlt's package folders, the DuckDB WAL and
the simulator's request counter.

dlt moves each load package through `normalize/extracted/<load_id>` (extract), `load/new`
(normalize writing), `load/normalized` (waiting for and during the load: its jobs move from
`new_jobs` to `started_jobs` to `completed_jobs`) and `load/loaded`. A first sync makes
three packages: the list tables, then webhooks/deliveries/users, then the run record (with the
delivery marks); a later one makes the first two and writes its record by SQL, in one
transaction after the second is loaded (`pipelines/run/run_record.py`), which leaves no
package. On a warehouse whose delivery marks are not recorded yet (a first sync) a
package holding only `_sync_delivery_marks` comes first; it is not counted, so the indexes
name the same packages on fresh and incremental runs (deliveries loaded in waves would add
packages too, but the chaos workspaces are far below a wave's 50,000 rows). A kill
point names a stage of the k-th package this run made ("or later", so a point that was passed
between two polls still kills the run at once, a little later than named), or a number of API
requests served for the walk.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .child import SyncChild

PIPELINE = "drone_ops"
STAGE_DIRS = {
    "extracted": "normalize/extracted",
    "new": "load/new",
    "normalized": "load/normalized",
    "loaded": "load/loaded",
}
ORDER = {stage: number for number, stage in enumerate(STAGE_DIRS)}
PACKAGE_NAMES = ("lists", "webhooks", "record")
JOB_DIRS = ("new_jobs", "started_jobs", "completed_jobs")
MARKS_ONLY = {"_sync_delivery_marks", "_dlt_pipeline_state"}


@dataclass(frozen=True)
class Package:
    load_id: str
    stage: str
    new_jobs: int
    started_jobs: int
    completed_jobs: int


def _count(folder: Path) -> int:
    try:
        return sum(1 for _ in folder.iterdir())
    except OSError:
        return 0


def _marks_only(package: Path) -> bool:
    """The package a first sync records its delivery marks in before anything else."""
    tables: set[str] = set()
    for jobs in JOB_DIRS:
        try:
            tables.update(job.name.split(".", 1)[0] for job in (package / jobs).iterdir())
        except OSError:
            continue
    return "_sync_delivery_marks" in tables and tables <= MARKS_ONLY


def working_folder(pipelines_dir: Path) -> Path:
    """The sync's dlt working folder in `pipelines_dir`: named per warehouse
    (`drone_ops_<dataset>_<hash>`), so found by its prefix."""
    found = sorted(
        folder
        for folder in pipelines_dir.glob(f"{PIPELINE}_*")
        if folder.is_dir() and not folder.name.endswith(".damaged")
    )
    return found[0] if found else pipelines_dir / PIPELINE


def packages(pipelines_dir: Path, *, skip_marks: bool = True) -> dict[str, Package]:
    """Every package in the pipeline folder but the first sync's marks package, at its
    furthest stage (a package being moved can show in two)."""
    found: dict[str, Package] = {}
    root = working_folder(pipelines_dir)
    for stage, relative in STAGE_DIRS.items():
        folder = root / relative
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir() or (skip_marks and _marks_only(entry)):
                continue
            package = Package(
                entry.name,
                stage,
                _count(entry / "new_jobs"),
                _count(entry / "started_jobs"),
                _count(entry / "completed_jobs"),
            )
            previous = found.get(entry.name)
            if previous is None or ORDER[stage] > ORDER[previous.stage]:
                found[entry.name] = package
    return found


def pending_packages(pipelines_dir: Path) -> list[str]:
    """Packages not loaded: `<stage>/<load_id>` of each (empty when nothing is pending)."""
    return sorted(
        f"{p.stage}/{p.load_id}"
        for p in packages(pipelines_dir, skip_marks=False).values()
        if p.stage != "loaded"
    )


@dataclass(frozen=True)
class Observation:
    packages: tuple[Package, ...]
    """Packages made since the watch began, oldest first."""
    wal: bool
    requests: int

    def describe(self) -> str:
        parts = [
            f"{PACKAGE_NAMES[min(i, 2)]}:{p.stage}"
            f"[{p.new_jobs}/{p.started_jobs}/{p.completed_jobs}]"
            for i, p in enumerate(self.packages)
        ]
        return f"requests={self.requests} wal={self.wal} " + " ".join(parts)


@dataclass(frozen=True)
class KillPoint:
    name: str
    phase: str
    test: Callable[[Observation], bool]
    needs_requests: bool = False
    delay: float = 0.0


def walk_point(requests: int, delay: float = 0.0) -> KillPoint:
    """After the simulator served `requests` API requests of this run (plus `delay`)."""
    return KillPoint(
        f"walk@{requests}req+{delay * 1000:.0f}ms",
        "walk",
        lambda obs: obs.requests >= requests,
        needs_requests=True,
        delay=delay,
    )


def _stage_at_least(obs: Observation, index: int, stage: str) -> bool:
    return len(obs.packages) > index and ORDER[obs.packages[index].stage] >= ORDER[stage]


def package_point(kind: str, index: int, delay: float = 0.0) -> KillPoint:
    """A stage of the `index`-th package of the run (0 lists, 1 webhooks, 2 the run record of a
    first sync); `record`: the `index`-th package loaded, the record's SQL write next."""

    def loading(obs: Observation, done: bool) -> bool:
        if _stage_at_least(obs, index, "loaded"):
            return True
        if not _stage_at_least(obs, index, "normalized"):
            return False
        package = obs.packages[index]
        return (
            package.completed_jobs > 0
            if done
            else package.started_jobs + package.completed_jobs > 0
        )

    tests: dict[str, tuple[str, Callable[[Observation], bool]]] = {
        "extract": ("extract", lambda obs: len(obs.packages) > index),
        "normalize": ("normalize", lambda obs: _stage_at_least(obs, index, "new")),
        "normalized": ("normalize", lambda obs: _stage_at_least(obs, index, "normalized")),
        "load-started": ("load", lambda obs: loading(obs, done=False)),
        "load-mid": ("load", lambda obs: loading(obs, done=True)),
        "wal": (
            "load",
            lambda obs: (
                _stage_at_least(obs, index, "loaded")
                or (_stage_at_least(obs, index, "normalized") and obs.wal)
            ),
        ),
        "loaded": (
            "between-groups" if index == 0 else "after-load",
            lambda obs: _stage_at_least(obs, index, "loaded"),
        ),
        # a later run's last data package loaded: what follows is the record's SQL write
        "record": ("record", lambda obs: _stage_at_least(obs, index, "loaded")),
    }
    phase, test = tests[kind]
    where = "sql" if kind == "record" else PACKAGE_NAMES[index]
    name = f"{kind}#{where}" + (f"+{delay * 1000:.0f}ms" if delay else "")
    return KillPoint(name, phase if index < 2 else "record", test, delay=delay)


@dataclass
class KillRecord:
    point: KillPoint
    hit: bool
    """True when the signal reached a running sync (False: it had finished before)."""
    seen: str
    seconds: float


def signal_at(
    child: SyncChild,
    point: KillPoint,
    *,
    pipelines_dir: Path,
    database: Path,
    requests: Callable[[], int] | None = None,
    sig: int = signal.SIGKILL,
    timeout: float = 600.0,
    poll: float = 0.002,
) -> KillRecord:
    """Watches the child's run and sends `sig` once `point` is reached."""
    baseline = set(packages(pipelines_dir))
    wal = Path(str(database) + ".wal")
    base_requests = requests() if point.needs_requests and requests is not None else 0
    deadline = time.monotonic() + timeout
    while child.alive():
        if time.monotonic() > deadline:
            child.stop()
            raise AssertionError(f"the sync ran for more than {timeout}s: {child.output()}")
        found = packages(pipelines_dir)
        made = tuple(found[i] for i in sorted(set(found) - baseline))
        served = (requests() - base_requests) if point.needs_requests and requests else 0
        observation = Observation(made, wal.exists(), served)
        if point.test(observation):
            if point.delay:
                time.sleep(point.delay)
            hit = child.send(sig)
            return KillRecord(point, hit, observation.describe(), time.monotonic() - child.started)
        time.sleep(poll)
    return KillRecord(point, False, "the run finished first", time.monotonic() - child.started)
