"""`python -m bench http`: CPU per request of each HTTP engine, ours and bare, side by side.

Why: the sync keeps httpx as its client interface, so the only engine it could change is the
transport behind `httpx.BaseTransport`. This measures whether that would pay: the same page,
fetched by the same thread pool at the same concurrency as the walk (16 in flight), through

- `ours`: `DroneOpsClient.get_json` as the sync runs it (httpx's default transport);
- `ours_urllib3`: the same client on `bench.urllib3_transport.Urllib3Transport`;
- `httpx`: a bare `httpx.Client.get` + `orjson.loads`, as the floor walks;
- `httpx_urllib3`: the same bare client on the urllib3 transport;
- `urllib3`: a bare urllib3 connection pool + `orjson.loads`, no httpx at all.

Rounds interleave the variants so drift hits all alike; the table gives medians of the rounds.
CPU is this process's (`time.process_time`); the simulator runs in its own process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import urllib3

from drone_ops_sync.sources.drone_ops import DroneOpsClient
from testkit.simulator_process import running_simulator

from .report import machine_info, write_result
from .runner import simulator_scale
from .urllib3_transport import Urllib3Transport

VARIANTS = ("ours", "ours_urllib3", "httpx", "httpx_urllib3", "urllib3")
PAGE_PATH = "/v1/projects"


def parse_http_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench http", description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=2000, help="per variant and round")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (medians)")
    p.add_argument("--threads", type=int, default=20, help="the walk's thread pool")
    p.add_argument("--in-flight", type=int, default=16, help="requests in flight at once")
    p.add_argument("--latency-ms", type=int, default=0)
    p.add_argument("--output", type=Path)
    return p.parse_args(argv)


def _fetchers(
    base_url: str, key: str, in_flight: int
) -> tuple[dict[str, Callable[[], Any]], list[Any]]:
    """One fetch function per variant, and what to close after. Our client's own limit is the
    measured concurrency, so `--in-flight` bounds ours as it bounds the bare engines; the bare
    pools get room for every thread, as our client's pool has."""
    pool = 2 * in_flight + 8
    auth = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    ours = DroneOpsClient(base_url, key, max_workers=in_flight)
    ours_u3 = DroneOpsClient(base_url, key, max_workers=in_flight, transport=Urllib3Transport(pool))
    bare = httpx.Client(base_url=base_url, headers=auth, limits=limits)
    bare_u3 = httpx.Client(base_url=base_url, headers=auth, transport=Urllib3Transport(pool))
    origin = httpx.URL(base_url)
    raw = urllib3.HTTPConnectionPool(origin.host, origin.port, maxsize=pool, headers=auth)
    fetch = {
        "ours": lambda: ours.get_json(PAGE_PATH),
        "ours_urllib3": lambda: ours_u3.get_json(PAGE_PATH),
        "httpx": lambda: orjson.loads(bare.get(PAGE_PATH).content),
        "httpx_urllib3": lambda: orjson.loads(bare_u3.get(PAGE_PATH).content),
        "urllib3": lambda: orjson.loads(raw.request("GET", PAGE_PATH).data),
    }
    return fetch, [ours, ours_u3, bare, bare_u3, raw]


def _round(
    fetch: Callable[[], Any], requests: int, threads: int, in_flight: int
) -> dict[str, float]:
    """`requests` fetches through the pool; CPU and wall microseconds per request."""
    slots = threading.Semaphore(in_flight)
    projects: list[int] = []

    def one(_: int) -> None:
        with slots:
            projects.append(len(fetch()["projects"]))

    wall, cpu = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(requests)))
    if len(projects) != requests or not all(projects):
        raise RuntimeError("a variant returned a page without projects")
    return {
        "cpu_us": (time.process_time() - cpu) / requests * 1e6,
        "wall_us": (time.monotonic() - wall) / requests * 1e6,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Starts a `small` simulator and measures every variant, rounds interleaved."""
    scale, extra = simulator_scale("small")
    load_at_start = os.getloadavg()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    with running_simulator(scale=scale, latency_ms=args.latency_ms, extra_args=extra) as sim:
        fetch, closers = _fetchers(sim.base_url, sim.read_key, args.in_flight)
        try:
            for name in VARIANTS:  # a warm-up round: connections opened, code paths loaded
                _round(fetch[name], min(200, args.requests), args.threads, args.in_flight)
            for _ in range(max(1, args.rounds)):
                for name in VARIANTS:
                    samples[name].append(
                        _round(fetch[name], args.requests, args.threads, args.in_flight)
                    )
        finally:
            for closer in closers:
                closer.close()
    medians = {
        name: {
            "cpu_us": round(statistics.median(s["cpu_us"] for s in runs)),
            "wall_us": round(statistics.median(s["wall_us"] for s in runs)),
            "cpu_us_all": [round(s["cpu_us"]) for s in runs],
        }
        for name, runs in samples.items()
    }
    return {
        "created": datetime.now(UTC).isoformat(),
        "requests": args.requests,
        "rounds": args.rounds,
        "threads": args.threads,
        "in_flight": args.in_flight,
        "latency_ms": args.latency_ms,
        "machine": machine_info(load_at_start),
        "variants": medians,
    }


def format_http_table(document: dict[str, Any]) -> str:
    """One line per variant: CPU per request, each round's, and the ratio to ours."""
    variants = document["variants"]
    ours = variants["ours"]["cpu_us"] or 1
    lines = [
        f"{document['requests']} GETs of {PAGE_PATH} per round, {document['rounds']} rounds,"
        f" {document['threads']} threads, {document['in_flight']} in flight,"
        f" latency {document['latency_ms']} ms",
        f"{'variant':<15} {'CPU µs/req':>10} {'wall µs/req':>11} {'vs ours':>8}  each round",
    ]
    for name, figures in variants.items():
        lines.append(
            f"{name:<15} {figures['cpu_us']:>10} {figures['wall_us']:>11}"
            f" {figures['cpu_us'] / ours:>7.2f}x  {figures['cpu_us_all']}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_http_args(argv)
    document = measure(args)
    output = args.output or Path("bench/results") / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-http.json"
    return write_result(output, document, format_http_table(document))
