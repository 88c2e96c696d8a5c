"""`python -m bench.events`: how fresh project changes are with the webhook receiver.

A simulated workspace is synced once (DuckDB); then `drone-sync listen` receives its webhook
deliveries and applies them, while a burst of `--rate` project updates per second runs for
`--seconds` through the API's PATCH, and a scheduled `drone-sync run` starts `--run-at` seconds
into the burst. Measured:

- freshness: from each PATCH's answer to the first moment the warehouse's current row shows that
  update or a later one of the same project (polled every 0.5 s under the file's access lock, as
  the sync's own steps read it): p50, p95, max; also apart for the updates made while the
  scheduled run held the warehouse;
- events per second the receiver took and applied; its CPU seconds and peak RSS;
- the scheduled run: its wall time and exit code;
- with `--follow-marts N` (the receiver's marts follower, docs/events.md "Marts that follow"):
  the warehouse is built with its models and snapshot first, and event-to-snapshot latency is
  measured too: from each PATCH's answer to the first poll of the BI snapshot's `dim_projects`
  (read-only, as a BI tool reads it) that shows that update or a later one; also each partial
  build's seconds (from the receiver's log), the time it holds the file's access lock;
- correctness: after the burst, every updated project's current row equals the API, and no
  project's row ever went back to an older update (a poll seeing a lower update number).

    python -m bench.events --scale tenth --rate 50 --seconds 60 --run-at 30
    python -m bench.events --scale small --rate 50 --seconds 60 --run-at 30 --follow-marts 15
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import httpx
import psutil

from bench.runner import simulator_scale
from drone_ops_sync.pipelines.run.lock import access_lock
from testkit.simulator_process import SimulatorHandle, running_simulator, stop_process

MARKER = re.compile(r"^burst (\d+)$")
FOLLOWED = re.compile(r"marts followed the events: (\d+) models rebuilt.* in ([\d.]+) s")
POLL_SECONDS = 0.5


@dataclass
class Burst:
    """What the burst did and what the poller saw."""

    project_of: dict[int, str] = field(default_factory=dict)
    patched_at: dict[int, float] = field(default_factory=dict)
    visible_at: dict[int, float] = field(default_factory=dict)
    newest_seen: dict[str, int] = field(default_factory=dict)
    went_back: int = 0
    in_snapshot_at: dict[int, float] = field(default_factory=dict)
    receiver_rss: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "drone_ops_sync.pipelines.console_script", *args]


def sync(
    env: dict[str, str], root: Path, database: Path, timeout: float, *, models: bool = False
) -> subprocess.CompletedProcess[str]:
    """One `drone-sync run` of the warehouse, JSON output; without models or snapshot unless
    `models`."""
    skip = () if models else ("--no-models", "--no-snapshot")
    return subprocess.run(
        cli("run", "--database", str(database), *skip, "--log-format", "json"),
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def project_ids(api: httpx.Client) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    for _ in range(10_000):
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/projects", params=params).json()
        ids += [project["id"] for project in page["projects"]]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return ids


def poll(database: Path, burst: Burst, receiver: psutil.Process, stop: threading.Event) -> None:
    """Records when each update became visible, and whether a row ever went backwards."""
    while not stop.wait(POLL_SECONDS):
        try:
            burst.receiver_rss = max(burst.receiver_rss, receiver.memory_info().rss)
            with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
                rows = con.execute(
                    "SELECT id, name FROM drone_ops.projects"
                    " WHERE _dlt_valid_to IS NULL AND name LIKE 'burst %'"
                ).fetchall()
        except (duckdb.Error, psutil.Error):
            continue
        now = time.monotonic()
        with burst.lock:
            for project_id, name in rows:
                match = MARKER.match(name)
                if match is None:
                    continue
                number = int(match.group(1))
                if number < burst.newest_seen.get(project_id, -1):
                    burst.went_back += 1
                burst.newest_seen[project_id] = max(number, burst.newest_seen.get(project_id, -1))
                for marker, owner in burst.project_of.items():
                    if owner == project_id and marker <= number and marker not in burst.visible_at:
                        burst.visible_at[marker] = now


def poll_snapshot(snapshot: Path, burst: Burst, stop: threading.Event) -> None:
    """Records when each update became visible in the BI snapshot's projects mart."""
    while not stop.wait(POLL_SECONDS):
        try:
            with duckdb.connect(str(snapshot), read_only=True) as con:
                rows = con.execute(
                    "SELECT project_id, name FROM drone_ops_marts.dim_projects"
                    " WHERE name LIKE 'burst %'"
                ).fetchall()
        except duckdb.Error:  # renamed over between two polls: the next one reads it
            continue
        now = time.monotonic()
        newest = {pid: int(m.group(1)) for pid, name in rows if (m := MARKER.match(name))}
        with burst.lock:
            for marker, owner in burst.project_of.items():
                if marker not in burst.in_snapshot_at and marker <= newest.get(owner, -1):
                    burst.in_snapshot_at[marker] = now


def run_burst(api: httpx.Client, ids: list[str], rate: float, seconds: float, burst: Burst) -> None:
    started = time.monotonic()
    total = int(rate * seconds)

    def one(number: int) -> None:
        delay = started + number / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        project_id = ids[number % len(ids)]
        with burst.lock:
            burst.project_of[number] = project_id
        api.patch(f"/v1/projects/{project_id}", json={"name": f"burst {number}"})
        with burst.lock:
            burst.patched_at[number] = time.monotonic()

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, range(total)))


def scheduled_run(env: dict[str, str], database: Path, root: Path, models: bool) -> dict[str, Any]:
    started = time.monotonic()
    done = sync(env, root, database, 900, models=models)
    error = None
    if done.returncode != 0:
        error = (done.stdout.strip().splitlines() or [done.stderr[-500:]])[-1][:600]
    return {
        "exit_code": done.returncode,
        "error": error,
        "started": started,
        "seconds": time.monotonic() - started,
    }


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(args: argparse.Namespace, root: Path, sim: SimulatorHandle) -> dict[str, Any]:
    database = root / "w.duckdb"
    env = dict(
        os.environ,
        SOURCES__DRONE_OPS__BASE_URL=sim.base_url,
        SOURCES__DRONE_OPS__API_KEY=sim.read_key,
        DLT_DATA_DIR=str(root / "dlt"),
    )
    follow = args.follow_marts > 0
    first = sync(env, root, database, 1800, models=follow)
    if first.returncode != 0:
        raise SystemExit(f"the initial sync failed: {first.stdout[-2000:]}")
    listen = subprocess.Popen(
        cli(
            "listen",
            "--port",
            "0",
            "--database",
            str(database),
            "--apply-every",
            str(args.apply_every),
            "--follow-marts",
            str(args.follow_marts),
        ),
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=(root / "listen.log").open("w"),
        text=True,
    )
    burst = Burst()
    stop = threading.Event()
    try:
        assert listen.stdout is not None
        url = listen.stdout.readline().strip().removeprefix("url=")
        headers = {"Authorization": f"Bearer {sim.full_key}"}
        with httpx.Client(base_url=sim.base_url, headers=headers, timeout=30) as api:
            api.post(
                "/v1/webhooks",
                json={"name": "bench", "url": f"{url}/events", "event_types": ["project.updated"]},
            ).raise_for_status()
            ids = project_ids(api)
            receiver = psutil.Process(listen.pid)
            cpu_before = sum(receiver.cpu_times()[:2])
            poller = threading.Thread(target=poll, args=(database, burst, receiver, stop))
            poller.start()
            snapshot = root / "w_bi.duckdb"
            snapshot_poller = threading.Thread(
                target=poll_snapshot, args=(snapshot, burst, stop), daemon=True
            )
            if follow:
                snapshot_poller.start()
            run_result: dict[str, Any] = {}
            timer = threading.Timer(
                args.run_at,
                lambda: run_result.update(scheduled_run(env, database, root, follow)),
            )
            burst_started = time.monotonic()
            timer.start()
            run_burst(api, ids, args.rate, args.seconds, burst)
            burst_seconds = time.monotonic() - burst_started
            timer.join()
            sim.wait_for_deliveries(timeout=120)
            _settle(burst, follow)
            stop.set()
            poller.join()
            if follow:
                snapshot_poller.join()
            cpu = sum(receiver.cpu_times()[:2]) - cpu_before
            health = httpx.get(f"{url}/health", timeout=10).json()
            lost = _lost(api, database, burst)
    finally:
        stop.set()
        stop_process(listen)
    report = _report(args, burst, burst_seconds, run_result, cpu, health, lost)
    if follow:
        report["snapshot"] = _snapshot_report(burst, health, (root / "listen.log").read_text())
    return report


def _snapshot_report(burst: Burst, health: dict[str, Any], log: str) -> dict[str, Any]:
    """Event-to-snapshot latency, and what each partial build cost (its file lock hold)."""
    latency = [
        burst.in_snapshot_at[n] - burst.patched_at[n]
        for n in burst.patched_at
        if n in burst.in_snapshot_at
    ]
    builds = [(int(m), float(s)) for m, s in FOLLOWED.findall(log)]
    seconds = [s for _, s in builds]
    return {
        "visible": len(latency),
        "latency_p50": statistics.median(latency) if latency else None,
        "latency_p95": percentile(latency, 0.95),
        "latency_max": max(latency) if latency else None,
        "partial_builds": len(builds),
        "partial_build_seconds_p50": statistics.median(seconds) if seconds else None,
        "partial_build_seconds_max": max(seconds) if seconds else None,
        "models_per_build": sorted({m for m, _ in builds}),
        "follower": health.get("marts"),
    }


def _settle(burst: Burst, follow: bool) -> None:
    """Waits (bounded) until every update is seen in the warehouse, and in the snapshot."""
    deadline = time.monotonic() + 120
    while len(burst.visible_at) < len(burst.patched_at) and time.monotonic() < deadline:
        time.sleep(0.5)
    while (
        follow
        and len(burst.in_snapshot_at) < len(burst.patched_at)
        and time.monotonic() < deadline + 120
    ):
        time.sleep(0.5)


def _lost(api: httpx.Client, database: Path, burst: Burst) -> int:
    """Updated projects whose current row is not what the API says after everything settled."""
    touched = sorted(set(burst.project_of.values()))
    with access_lock(database), duckdb.connect(str(database), read_only=True) as con:
        held = dict(
            con.execute(
                "SELECT id, name FROM drone_ops.projects WHERE _dlt_valid_to IS NULL"
            ).fetchall()
        )
    return sum(
        1 for pid in touched if api.get(f"/v1/projects/{pid}").json()["name"] != held.get(pid)
    )


def _report(
    args: argparse.Namespace,
    burst: Burst,
    burst_seconds: float,
    run: dict[str, Any],
    cpu: float,
    health: dict[str, Any],
    lost: int,
) -> dict[str, Any]:
    fresh = {
        n: burst.visible_at[n] - burst.patched_at[n]
        for n in burst.patched_at
        if n in burst.visible_at
    }
    run_start, run_end = run.get("started", 0.0), run.get("started", 0.0) + run.get("seconds", 0.0)
    during = [v for n, v in fresh.items() if run_start <= burst.patched_at[n] <= run_end]
    outside = [v for n, v in fresh.items() if not run_start <= burst.patched_at[n] <= run_end]
    applied = health.get("applied") or {}
    return {
        "scale": args.scale,
        "rate": args.rate,
        "seconds": args.seconds,
        "run_at": args.run_at,
        "updates": len(burst.patched_at),
        "visible": len(fresh),
        "freshness_p50": statistics.median(fresh.values()) if fresh else None,
        "freshness_p95": percentile(list(fresh.values()), 0.95),
        "freshness_max": max(fresh.values()) if fresh else None,
        "freshness_p95_outside_run": percentile(outside, 0.95),
        "freshness_p95_during_run": percentile(during, 0.95),
        "updates_per_second": len(burst.patched_at) / burst_seconds,
        "events_received": health.get("events_received"),
        "events_applied": applied.get("applied"),
        "apply_outcomes": applied.get("outcomes"),
        "receiver_cpu_seconds": cpu,
        "receiver_peak_rss_mb": burst.receiver_rss / 1e6,
        "scheduled_run": {k: v for k, v in run.items() if k != "started"},
        "lost": lost,
        "went_back": burst.went_back,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.events")
    parser.add_argument("--scale", default="tenth", choices=("tiny", "small", "tenth"))
    parser.add_argument("--rate", type=float, default=50.0, help="project updates per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--run-at", type=float, default=30.0, help="scheduled run start, s")
    parser.add_argument("--apply-every", type=float, default=1.0)
    parser.add_argument(
        "--follow-marts",
        type=float,
        default=0.0,
        help="the receiver's --follow-marts (0: off); on, event-to-snapshot latency is measured",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    sim_scale, extra = simulator_scale(args.scale)
    with (
        tempfile.TemporaryDirectory(prefix="drone-ops-events-") as scratch,
        running_simulator(seed=42, scale=sim_scale, admin=True, extra_args=extra) as sim,
    ):
        result = measure(args, Path(scratch), sim)
    print(json.dumps(result, indent=2, default=str))
    if args.output is not None:
        args.output.write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
