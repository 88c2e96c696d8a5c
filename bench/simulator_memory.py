"""`python -m bench.simulator_memory`: what the simulator of many workspaces holds.

One simulator process serving `--workspaces` seeded workspaces, started as `python -m bench
fleet` starts it; its RSS, threads and CPU read from /proc after start, after every workspace
has been created (one admin request each), and after every workspace has been walked once as
a first sync walks it (`floor.FloorWalk`, every page of every list), `--parallel` workspaces at
a time. `--rewalk` walks them all a second time, which is what a later full sync costs the
simulator. Medians over `--runs` fresh processes.

    python -m bench.simulator_memory --workspaces 500 --scale small --latency-ms 50 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from testkit.simulator_process import SimulatorHandle, running_simulator

from .floor import FloorWalk

_TICK = os.sysconf("SC_CLK_TCK")


def process_figures(pid: int) -> dict[str, float]:
    """RSS (MB), its peak, the thread count and the CPU seconds so far of one process."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return {
        "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
        "peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024, 1),
        "threads": int(status["Threads"]),
        "cpu_s": (int(fields[11]) + int(fields[12])) / _TICK,
    }


def _walk_all(pid: int, handles: list[SimulatorHandle], parallel: int) -> dict[str, float]:
    started, cpu = time.monotonic(), process_figures(pid)["cpu_s"]
    with ThreadPoolExecutor(parallel) as pool:
        walks = list(pool.map(lambda h: FloorWalk(h.base_url, h.read_key, 4).run(), handles))
    after = process_figures(pid)
    return after | {
        "wall_s": round(time.monotonic() - started, 1),
        "walk_cpu_s": round(after["cpu_s"] - cpu, 2),
        "requests": sum(w.requests for w in walks),
    }


def measure(
    workspaces: int, scale: str, latency_ms: int, parallel: int, rewalk: bool
) -> dict[str, Any]:
    """One fresh simulator process, measured at each stage."""
    extra = ["--workspaces", str(workspaces)]
    with running_simulator(
        seed=42, scale=scale, latency_ms=latency_ms or None, admin=True, extra_args=extra
    ) as sim:
        pid = sim.process.pid
        out: dict[str, Any] = {"started": process_figures(pid)}
        handles = [sim.workspace(i) for i in range(workspaces)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda h: h.counts(), handles))
        out["created"] = process_figures(pid)
        out["walked"] = _walk_all(pid, handles, parallel)
        if rewalk:
            out["rewalked"] = _walk_all(pid, handles, parallel)
    return out


def medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {
        stage: {k: statistics.median(r[stage][k] for r in runs) for k in runs[0][stage]}
        for stage in runs[0]
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.simulator_memory", description=__doc__)
    p.add_argument("--workspaces", type=int, default=500)
    p.add_argument("--scale", choices=("tiny", "small"), default="small")
    p.add_argument("--latency-ms", type=int, default=50)
    p.add_argument("--parallel", type=int, default=16, help="workspaces walked at once")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rewalk", action="store_true", help="walk every workspace a second time")
    a = p.parse_args(argv)
    runs = []
    for _ in range(a.runs):
        runs.append(measure(a.workspaces, a.scale, a.latency_ms, a.parallel, a.rewalk))
        print(json.dumps(runs[-1]), flush=True)
    print(json.dumps({"median": medians(runs)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
