"""The fleet benchmark's result document, printed tables and target checks.

Every figure is a median over the repetitions: a workspace alone (wall, CPU and peak RSS of its
`drone-sync run` process tree), a fleet per size and parallelism, and the fleet against the
singles of the same workspaces: its wall against the slowest single (the ideal when the walks
are bound by latency, not CPU) and against the sum of the singles (one after another), its CPU
per workspace against the singles' mean.

How many workspaces one machine keeps fresh on a schedule of `SCHEDULE_SECONDS`:
`floor(SCHEDULE_SECONDS x N / wall)` for the measured fleet with the highest throughput
(workspaces per second of wall) on that destination: what the fleet synced per second of its
wall, for a whole interval. It assumes the throughput holds beyond the sizes measured (the
fleet is CPU-bound at the largest: more workspaces queue behind `--parallel`) and that every
scheduled run costs an initial sync (a quiet re-sync costs less: a bound on the safe side).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from .measurement import FleetOptions
from .report import machine_info

SCHEDULE_SECONDS = 900
RSS_LIMIT_MB = 1024.0
WALL_VS_SLOWEST_LIMIT = 1.5
"""4 `tenth` workspaces at 50 ms on PostgreSQL: the fleet within this of the slowest single."""
CPU_PER_WORKSPACE_LIMIT = 1.1
WALL_VS_SUM_LIMIT = 0.3
"""16 `small` workspaces: the fleet within this share of their singles one after another."""


def _median(values: Sequence[float]) -> float:
    return round(float(statistics.median(values)), 3) if values else float("nan")


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def singles(samples: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per destination and workspace: medians of each workspace synced alone."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in samples:
        if s["kind"] == "single":
            grouped.setdefault((s["destination"], s["workspaces"][0]), []).append(s)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (destination, name), group in sorted(grouped.items()):
        out.setdefault(destination, {})[name] = {
            "runs": len(group),
            "wall_seconds": _median([s["wall_seconds"] for s in group]),
            "wall_all": [s["wall_seconds"] for s in group],
            "cpu_seconds": _median([s["cpu_seconds"] for s in group]),
            "peak_rss_mb": _median([s["peak_rss_mb"] for s in group]),
            "simulators_cpu_seconds": _median([s["simulators_cpu_seconds"] for s in group]),
            "requests": int(_median([s["requests"] for s in group])),
        }
    return out


def fleets(
    samples: Sequence[dict[str, Any]], alone: dict[str, dict[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Per destination, size and parallelism: the fleet's medians beside its singles'."""
    grouped: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for s in samples:
        if s["kind"] == "fleet":
            grouped.setdefault((s["destination"], s["size"], s["parallel"]), []).append(s)
    out = []
    for (destination, size, parallel), group in sorted(grouped.items()):
        names = group[0]["workspaces"]
        own = [alone[destination][n] for n in names]
        wall = _median([s["wall_seconds"] for s in group])
        cpu = _median([s["cpu_seconds"] for s in group])
        slowest = max(o["wall_seconds"] for o in own)
        total = round(sum(o["wall_seconds"] for o in own), 3)
        single_cpu = sum(o["cpu_seconds"] for o in own) / size
        out.append(
            {
                "destination": destination,
                "workspaces": size,
                "parallel": parallel,
                "runs": len(group),
                "wall_seconds": wall,
                "wall_all": [s["wall_seconds"] for s in group],
                "cpu_seconds": cpu,
                "peak_rss_mb": _median([s["peak_rss_mb"] for s in group]),
                "peak_rss_mb_max": max(s["peak_rss_mb"] for s in group),
                "peak_pss_mb": _median([s["peak_pss_mb"] for s in group]),
                "largest_process_rss_mb": _median([s["largest_process_rss_mb"] for s in group]),
                "coordinator_rss_mb": _median([s["root_peak_rss_mb"] for s in group]),
                "coordinator_cpu_seconds": _median([s["root_cpu_seconds"] for s in group]),
                "simulators_cpu_seconds": _median([s["simulators_cpu_seconds"] for s in group]),
                "server_cpu_seconds": _median(
                    [s["server_cpu_seconds"] for s in group if s["server_cpu_seconds"] is not None]
                )
                if destination == "postgres"
                else None,
                "requests": int(_median([s["requests"] for s in group])),
                "other_cpu_seconds": _median([s.get("other_cpu_seconds", 0.0) for s in group]),
                "singles_requests": sum(o["requests"] for o in own),
                "slowest_single_seconds": slowest,
                "sum_of_singles_seconds": total,
                "wall_vs_slowest_single": _ratio(wall, slowest),
                "wall_vs_sum_of_singles": _ratio(wall, total),
                "cpu_per_workspace": round(cpu / size, 2),
                "single_cpu_per_workspace": round(single_cpu, 2),
                "cpu_per_workspace_ratio": _ratio(cpu / size, single_cpu),
                "workspaces_per_second": round(size / wall, 4) if wall else None,
            }
        )
    return out


def freshness(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per destination: workspaces kept fresh every `SCHEDULE_SECONDS`, from the measured fleet
    with the highest throughput (module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    for destination in sorted({r["destination"] for r in rows}):
        best = max(
            (r for r in rows if r["destination"] == destination),
            key=lambda r: r["workspaces_per_second"] or 0.0,
        )
        out[destination] = {
            "from_workspaces": best["workspaces"],
            "from_parallel": best["parallel"],
            "from_wall_seconds": best["wall_seconds"],
            "workspaces_per_schedule": math.floor(
                SCHEDULE_SECONDS * best["workspaces"] / best["wall_seconds"]
            ),
            "formula": f"floor({SCHEDULE_SECONDS} s x N / fleet wall), best N/wall measured",
        }
    return out


def check_fleet_targets(scale: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets, where this invocation measured what they need."""
    checks: list[dict[str, Any]] = []

    def add(name: str, value: Any, limit: str, met: bool) -> None:
        checks.append({"target": name, "value": value, "limit": limit, "met": met})

    def at_most(name: str, value: float | None, limit: float) -> None:
        add(name, value, f"<= {limit}", value is not None and value <= limit)

    for r in rows:
        where = f"{r['workspaces']} {scale} on {r['destination']}, --parallel {r['parallel']}"
        if r["workspaces"] == 4 and scale == "tenth" and r["destination"] == "postgres":
            at_most(
                f"{where}: wall / slowest single",
                r["wall_vs_slowest_single"],
                WALL_VS_SLOWEST_LIMIT,
            )
        if r["workspaces"] == 16 and scale == "small":
            at_most(
                f"{where}: wall / sum of singles", r["wall_vs_sum_of_singles"], WALL_VS_SUM_LIMIT
            )
        if r["workspaces"] > 1:
            at_most(
                f"{where}: CPU per workspace, fleet / single",
                r["cpu_per_workspace_ratio"],
                CPU_PER_WORKSPACE_LIMIT,
            )
        add(
            f"{where}: peak RSS of the whole fleet (MB)",
            r["peak_rss_mb_max"],
            f"< {RSS_LIMIT_MB:g}",
            r["peak_rss_mb_max"] < RSS_LIMIT_MB,
        )
    return checks


def build_fleet_document(
    options: FleetOptions,
    samples: Sequence[dict[str, Any]],
    context: dict[str, Any],
    total_seconds: float,
) -> dict[str, Any]:
    alone = singles(samples)
    rows = fleets(samples, alone)
    return {
        "benchmark": "fleet",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "scale": options.scale,
        "latency_ms": options.latency_ms,
        "runs": options.runs,
        "workspaces": options.workspaces,
        "destinations": options.destinations,
        "parallel": options.parallel,
        "sizing": options.sizing,
        "max_workers": options.max_workers,
        "seed": options.seed,
        "machine": machine_info(context.get("load_average_at_start")),
        "code_at_start": context.get("code_at_start"),
        "workspace_counts": context.get("workspace_counts"),
        "warm_seconds": context.get("warm_seconds"),
        "singles": alone,
        "fleets": rows,
        "freshness": freshness(rows),
        "targets": check_fleet_targets(options.scale, rows),
        "failures": context.get("failures") or [],
        "total_seconds": round(total_seconds, 1),
        "notes": (
            "wall, CPU and peak RSS are of our processes only (drone-sync run and its"
            " per-workspace processes, RSS summed over the tree, sampled every 50 ms); the"
            " simulators' CPU (and the PostgreSQL server's, with its backends) is measured"
            " apart and shares the same cores"
        ),
        "samples": list(samples),
    }


def format_fleet(document: dict[str, Any]) -> str:
    """The printed tables: singles, fleets beside them, freshness and the targets."""
    lines = [
        f"fleet: scale={document['scale']} latency={document['latency_ms']} ms"
        f" runs={document['runs']} (medians) workers={document['max_workers']} per workspace",
        "each workspace alone (drone-sync run --workspace NAME --no-models):",
        f"  {'destination':<9} {'workspace':<9} {'wall s':>7} {'CPU s':>6} {'RSS MB':>7}"
        f" {'sim CPU':>7} {'requests':>8}",
    ]
    for destination, alone in document["singles"].items():
        for name, s in alone.items():
            lines.append(
                f"  {destination:<9} {name:<9} {s['wall_seconds']:7.2f} {s['cpu_seconds']:6.1f}"
                f" {s['peak_rss_mb']:7.0f} {s['simulators_cpu_seconds']:7.1f} {s['requests']:>8}"
            )
    lines += [
        "fleets (drone-sync run --no-models --parallel P):",
        f"  {'destination':<9} {'N':>3} {'P':>2} {'wall s':>7} {'slowest':>7} {'sum':>7}"
        f" {'/slow':>6} {'/sum':>5} {'CPU s':>6} {'CPU/ws':>6} {'single':>6} {'ratio':>5}"
        f" {'RSS MB':>6} {'PSS MB':>6} {'sim CPU':>7}",
    ]
    for r in document["fleets"]:
        lines.append(
            f"  {r['destination']:<9} {r['workspaces']:>3} {r['parallel']:>2}"
            f" {r['wall_seconds']:7.2f} {r['slowest_single_seconds']:7.2f}"
            f" {r['sum_of_singles_seconds']:7.1f} {r['wall_vs_slowest_single']:6.2f}"
            f" {r['wall_vs_sum_of_singles']:5.2f} {r['cpu_seconds']:6.1f}"
            f" {r['cpu_per_workspace']:6.2f} {r['single_cpu_per_workspace']:6.2f}"
            f" {r['cpu_per_workspace_ratio']:5.2f} {r['peak_rss_mb']:6.0f}"
            f" {r['peak_pss_mb']:6.0f} {r['simulators_cpu_seconds']:7.1f}"
        )
    for destination, f in document["freshness"].items():
        lines.append(
            f"fresh every {SCHEDULE_SECONDS // 60} min on {destination}:"
            f" {f['workspaces_per_schedule']} workspaces ({f['formula']}:"
            f" N={f['from_workspaces']}, P={f['from_parallel']}, {f['from_wall_seconds']:.1f} s)"
        )
    for check in document["targets"]:
        state = "MET" if check["met"] else "NOT MET"
        lines.append(f"  [{state:>7}] {check['target']}: {check['value']} ({check['limit']})")
    for failure in document.get("failures") or []:
        lines.append(
            f"  FAILED: {failure['size']} on {failure['destination']}, --parallel"
            f" {failure['parallel']}, run {failure['run']}: {failure['error'][:300]}"
        )
    lines.append(f"note: {document['notes']}")
    return "\n".join(lines)
