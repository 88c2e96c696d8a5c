"""`python -m bench http`: CPU per request of each HTTP engine, ours and bare, side by side.

Why: the sync keeps httpx as its client interface, so an engine can only change behind it (a
transport) or around it (how the walk's threads drive it). This measures each candidate on the
same page, fetched by the same thread pool at the walk's concurrency (16 in flight):

- `ours`: `DroneOpsClient.get_json` as the sync runs it (its urllib3 transport and a cookie
  jar that keeps nothing, `sources/drone_ops/http/transport.py`);
- `ours_httpcore`: the client as it was before, on httpx's own transport (httpcore + h11) with
  httpx's cookie jar;
- `ours_cookies`: `ours` with httpx's cookie jar back (what that jar costs alone);
- `httpx`: a bare `httpx.Client.get` + `orjson.loads`, as the floor walks;
- `httpx_urllib3`: the same bare client on our urllib3 transport;
- `httpx_aiohttp`: a bare `httpx.AsyncClient` on `httpx_aiohttp.AiohttpTransport` in one event
  loop thread, driven from the thread pool (`run_coroutine_threadsafe`), the way the walk's
  threads could use it without becoming asyncio;
- `aiohttp_loop`: the same client driven from inside its loop (16 tasks, no threads): what a
  walk rewritten for asyncio could reach;
- `urllib3`: a bare urllib3 connection pool + `orjson.loads`, no httpx at all.

The two aiohttp rows need `httpx-aiohttp`, which the project does not depend on: without it
they are left out of the table and say so. Rounds interleave the variants so drift hits all
alike; the table gives medians of the rounds. CPU is this process's (`time.process_time`, every
thread); the simulator runs in its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import urllib3

from drone_ops_sync.sources.drone_ops.internal import DroneOpsClient, Urllib3Transport
from testkit.simulator_process import running_simulator

from .report import machine_info, write_result
from .runner import simulator_scale


def _aiohttp_transport() -> Callable[[], httpx.AsyncBaseTransport] | None:
    """`httpx_aiohttp.AiohttpTransport`, or None: not a dependency of the project, so without
    it the aiohttp rows are left out."""
    try:
        module = importlib.import_module("httpx_aiohttp")
    except ImportError:
        return None
    transport: Callable[[], httpx.AsyncBaseTransport] = module.AiohttpTransport
    return transport


VARIANTS = (
    "ours",
    "ours_httpcore",
    "ours_cookies",
    "httpx",
    "httpx_urllib3",
    "httpx_aiohttp",
    "aiohttp_loop",
    "urllib3",
)
NEEDS_AIOHTTP = ("httpx_aiohttp", "aiohttp_loop")
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


class _Loop:
    """One asyncio event loop in a thread of its own, for the aiohttp rows."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


Fetch = Callable[[], Any]
Rounds = Callable[[int, int, int], dict[str, float]]
"""Runs one round of a variant: (requests, threads, in flight) -> µs per request."""


@contextlib.contextmanager
def _variants(base_url: str, key: str, in_flight: int) -> Iterator[dict[str, Rounds]]:
    """One round runner per variant, each closed after. Our client's own limit is the
    measured concurrency, so `--in-flight` bounds ours as it bounds the bare engines; the bare
    pools get room for every thread, as our client's pool has."""
    pool = 2 * in_flight + 8
    auth = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    with contextlib.ExitStack() as stack:
        ours = stack.enter_context(DroneOpsClient(base_url, key, max_workers=in_flight))
        ours_core = stack.enter_context(
            DroneOpsClient(
                base_url, key, max_workers=in_flight, transport=httpx.HTTPTransport(limits=limits)
            )
        )
        ours_jar = stack.enter_context(DroneOpsClient(base_url, key, max_workers=in_flight))
        for client in (ours_core, ours_jar):
            client._http.cookies = httpx.Cookies()  # httpx's own jar, as before
        bare = stack.enter_context(httpx.Client(base_url=base_url, headers=auth, limits=limits))
        bare_u3 = stack.enter_context(
            httpx.Client(base_url=base_url, headers=auth, transport=Urllib3Transport(pool))
        )
        origin = httpx.URL(base_url)
        raw = urllib3.HTTPConnectionPool(origin.host, origin.port, maxsize=pool, headers=auth)
        stack.callback(raw.close)
        fetch: dict[str, Fetch] = {
            "ours": lambda: ours.get_json(PAGE_PATH),
            "ours_httpcore": lambda: ours_core.get_json(PAGE_PATH),
            "ours_cookies": lambda: ours_jar.get_json(PAGE_PATH),
            "httpx": lambda: orjson.loads(bare.get(PAGE_PATH).content),
            "httpx_urllib3": lambda: orjson.loads(bare_u3.get(PAGE_PATH).content),
            "urllib3": lambda: orjson.loads(raw.request("GET", PAGE_PATH).data),
        }
        runners: dict[str, Rounds] = {
            name: functools.partial(_threaded_round, one) for name, one in fetch.items()
        }
        aiohttp_transport = _aiohttp_transport()
        if aiohttp_transport is not None:
            loop = _Loop()
            stack.callback(loop.close)

            async def open_client() -> httpx.AsyncClient:
                # made inside the loop: aiohttp's session belongs to the loop it was made in
                return httpx.AsyncClient(
                    base_url=base_url, headers=auth, transport=aiohttp_transport()
                )

            async_client: httpx.AsyncClient = loop.run(open_client())
            stack.callback(lambda: loop.run(async_client.aclose()))

            async def get_page() -> Any:
                return orjson.loads((await async_client.get(PAGE_PATH)).content)

            def from_threads(requests: int, threads: int, in_flight: int) -> dict[str, float]:
                return _threaded_round(lambda: loop.run(get_page()), requests, threads, in_flight)

            def in_the_loop(requests: int, threads: int, in_flight: int) -> dict[str, float]:
                result: dict[str, float] = loop.run(_loop_round(get_page, requests, in_flight))
                return result

            runners["httpx_aiohttp"] = from_threads
            runners["aiohttp_loop"] = in_the_loop
        yield {name: runners[name] for name in VARIANTS if name in runners}


def _threaded_round(fetch: Fetch, requests: int, threads: int, in_flight: int) -> dict[str, float]:
    """`requests` fetches through the pool; CPU and wall microseconds per request."""
    slots = threading.Semaphore(in_flight)
    projects: list[int] = []

    def one(_: int) -> None:
        with slots:
            projects.append(len(fetch()["projects"]))

    wall, cpu = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(requests)))
    return _per_request(projects, requests, wall, cpu)


async def _loop_round(get_page: Callable[[], Any], requests: int, in_flight: int) -> Any:
    """`requests` fetches as tasks of one event loop, `in_flight` at a time."""
    slots = asyncio.Semaphore(in_flight)
    projects: list[int] = []

    async def one() -> None:
        async with slots:
            projects.append(len((await get_page())["projects"]))

    wall, cpu = time.monotonic(), time.process_time()
    await asyncio.gather(*(one() for _ in range(requests)))
    return _per_request(projects, requests, wall, cpu)


def _per_request(projects: list[int], requests: int, wall: float, cpu: float) -> dict[str, float]:
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
    samples: dict[str, list[dict[str, float]]] = {}
    with (
        running_simulator(scale=scale, latency_ms=args.latency_ms, extra_args=extra) as sim,
        _variants(sim.base_url, sim.read_key, args.in_flight) as runners,
    ):
        samples = {name: [] for name in runners}
        for run in runners.values():  # a warm-up round: connections opened, code paths loaded
            run(min(200, args.requests), args.threads, args.in_flight)
        for _ in range(max(1, args.rounds)):
            for name, run in runners.items():
                samples[name].append(run(args.requests, args.threads, args.in_flight))
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
        "left_out": {
            name: "needs httpx-aiohttp (pip install httpx-aiohttp)"
            for name in VARIANTS
            if name not in medians
        },
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
    lines += [f"{name:<15} left out: {why}" for name, why in document.get("left_out", {}).items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_http_args(argv)
    document = measure(args)
    output = args.output or Path("bench/results") / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-http.json"
    return write_result(output, document, format_http_table(document))
