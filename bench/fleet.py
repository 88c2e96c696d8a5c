"""`python -m bench fleet`: a fleet of workspaces synced by one `drone-sync run`, against each
workspace synced alone, in one invocation.

The workspaces are served by one simulator process (`--workspaces`), each with its own seed,
keys and the benchmark's latency. Per
repetition: every workspace synced alone (`drone-sync run --workspace <name> --no-models`, a
fresh warehouse each), then each fleet size (the first N workspaces, `drone-sync run
--no-models --parallel P`, a fresh warehouse each), then the extra `--sizing` parallelisms at
the largest size. Every command is measured as a process tree (`fleet_process.py`); the
simulators' and the PostgreSQL server's CPU is measured apart.

    python -m bench fleet --scale small --workspaces 1,4,16 --destination duckdb,postgres \
        --parallel 4 --sizing 2,8 --runs 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testkit.postgres import PostgresUnavailable, RunningPostgres, create_database
from testkit.postgres import running_postgres as start_postgres
from testkit.simulator_process import SimulatorHandle, running_simulator

from .fleet_process import Measured, cpu_seconds_of, machine_busy_seconds, measure_command
from .fleet_report import build_fleet_document, format_fleet
from .floor import FloorWalk
from .measurement import FleetOptions
from .report import write_result
from .runner import POSTGRES_CREDENTIALS_ENV, REPO_ROOT, code_version, simulator_scale

DESTINATIONS = ("duckdb", "postgres")


def _numbers(text: str) -> list[int]:
    try:
        values = sorted({int(n) for n in text.split(",") if n.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of whole numbers") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("whole numbers of 1 or more")
    return values


def _destinations(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or set(names) - set(DESTINATIONS):
        raise argparse.ArgumentTypeError(f"choose from {', '.join(DESTINATIONS)}")
    return names


def parse_fleet_args(argv: Sequence[str] | None = None) -> FleetOptions:
    p = argparse.ArgumentParser(
        prog="python -m bench fleet", description=(__doc__ or "").splitlines()[0]
    )
    p.add_argument("--scale", choices=("tiny", "small", "tenth"), default="small")
    p.add_argument("--workspaces", type=_numbers, default=[1, 4, 16], help="fleet sizes")
    p.add_argument("--destination", type=_destinations, default=["duckdb"], help="or postgres")
    p.add_argument("--parallel", type=int, default=4, help="the fleet's --parallel")
    p.add_argument(
        "--sizing", type=_numbers, default=[], help="more --parallel values, at the largest size"
    )
    p.add_argument("--runs", type=int, default=3, help="repetitions (medians)")
    p.add_argument("--latency-ms", type=int, default=50, help="added per /v1 request")
    p.add_argument("--seed", type=int, default=42, help="workspace i gets seed + i")
    p.add_argument("--max-workers", type=int, default=16, help="requests in flight per workspace")
    p.add_argument("--output", type=Path, help="default bench/results/<timestamp>-fleet-...json")
    p.add_argument("--quiet", action="store_true")
    p.add_argument(
        "--no-warm", action="store_true", help="measure without a first walk of each simulator"
    )
    a = p.parse_args(argv)
    return FleetOptions(
        scale=a.scale,
        workspaces=a.workspaces,
        destinations=a.destination,
        parallel=max(1, a.parallel),
        sizing=[n for n in a.sizing if n != a.parallel],
        runs=max(1, a.runs),
        latency_ms=a.latency_ms,
        seed=a.seed,
        max_workers=a.max_workers,
        output=a.output,
        quiet=a.quiet,
        warm=not a.no_warm,
    )


def workspace_name(index: int) -> str:
    return f"w{index + 1:02d}"


def drone_sync_command() -> list[str]:
    script = Path(sys.executable).with_name("drone-sync")
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-m", "drone_ops_sync.pipelines.console_script"]
    )


class FleetBench:
    """One invocation: the simulators (and the server) are started by `run_fleet_bench`."""

    def __init__(
        self,
        options: FleetOptions,
        sims: Sequence[SimulatorHandle],
        root: Path,
        postgres: RunningPostgres | None,
    ) -> None:
        self.options = options
        self.sims = sims
        self.root = root
        self.postgres = postgres
        self.samples: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self._count = 0

    def log(self, message: str) -> None:
        if not self.options.quiet:
            print(message, file=sys.stderr, flush=True)

    def environment(self, names: Sequence[str], workdir: Path, database: str) -> dict[str, str]:
        """The workspaces as a deployment configures them through the environment only."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DEST"))}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        index = {workspace_name(i): sim for i, sim in enumerate(self.sims)}
        env["SOURCES__DRONE_OPS__WORKSPACES"] = json.dumps(
            {name: {"base_url": index[name].base_url} for name in names}
        )
        for name in names:
            env[f"SOURCES__DRONE_OPS__WORKSPACES__{name.upper()}__API_KEY"] = index[name].read_key
        env["SOURCES__DRONE_OPS__MAX_WORKERS"] = str(self.options.max_workers)
        env["DLT_DATA_DIR"] = str(workdir / "dlt-data")
        env["RUNTIME__DLTHUB_TELEMETRY"] = "false"
        if self.postgres is not None and database:
            env[POSTGRES_CREDENTIALS_ENV] = self.postgres.dsn(database)
        return env

    def measure(
        self, kind: str, destination: str, names: Sequence[str], rep: int, parallel: int
    ) -> dict[str, Any]:
        """One `drone-sync run` into a fresh warehouse; the sample as the result file keeps it."""
        self._count += 1
        label = f"{kind}-{names[0]}" if kind == "single" else f"{kind}-{len(names)}-p{parallel}"
        workdir = self.root / f"{self._count:03d}-{destination}-{label}"
        workdir.mkdir(parents=True)
        command = [*drone_sync_command(), "run", "--no-models", "--no-snapshot"]
        command += ["--log-format", "json", "--destination", destination]
        database = ""
        if destination == "postgres":
            assert self.postgres is not None
            database = f"fleet_{self._count:03d}"
            create_database(self.postgres, database)
        else:
            command += ["--database", str(workdir / "warehouse.duckdb")]
        if kind == "single":
            command += ["--workspace", names[0]]
        else:
            command += ["--parallel", str(parallel)]
        env = self.environment(names, workdir, database)
        used = [self.sims[int(name[1:]) - 1] for name in names]
        before = self._others_cpu(used)
        requests_before = [s.stats()["requests"] for s in used]
        machine_before = machine_busy_seconds()
        measured = measure_command(command, env, workdir)
        machine = machine_busy_seconds() - machine_before
        sims_cpu, server_cpu = (a - b for a, b in zip(self._others_cpu(used), before, strict=True))
        requests = sum(
            sum(s.stats()["requests"].values()) - sum(r.values())
            for s, r in zip(used, requests_before, strict=True)
        )
        if measured.exit_code != 0:
            raise RuntimeError(
                f"{label} on {destination} exited {measured.exit_code}: "
                f"{measured.summary().get('error')}\n{measured.output_tail}"
            )
        sample = self._sample(kind, destination, names, rep, parallel, measured)
        sample.update(requests=requests, simulators_cpu_seconds=round(sims_cpu, 2))
        sample["server_cpu_seconds"] = round(server_cpu, 2) if self.postgres else None
        # what other work on the machine took meanwhile (the benchmark's own sampling included)
        others = machine - measured.cpu_seconds - sims_cpu - server_cpu
        sample["other_cpu_seconds"] = round(max(others, 0.0), 2)
        self.samples.append(sample)
        self.log(
            f"  {destination:<8} {label:<16} {measured.wall_seconds:7.2f} s"
            f"  CPU {measured.cpu_seconds:6.1f} s (simulators {sims_cpu:5.1f} s)"
            f"  peak RSS {measured.peak_rss_mb:6.0f} MB  {requests} requests"
            f"  (other work {sample['other_cpu_seconds']:.1f} s CPU)"
        )
        return sample

    def _others_cpu(self, sims: Sequence[SimulatorHandle]) -> tuple[float, float]:
        """CPU seconds so far of the simulators and of the server with its exited backends."""
        sims_cpu = sum(cpu_seconds_of(pid) for pid in {s.process.pid for s in sims})
        if self.postgres is None:
            return sims_cpu, 0.0
        return sims_cpu, cpu_seconds_of(self.postgres.process.pid, with_children=True)

    @staticmethod
    def _sample(
        kind: str,
        destination: str,
        names: Sequence[str],
        rep: int,
        parallel: int,
        measured: Measured,
    ) -> dict[str, Any]:
        summary = measured.summary()
        per_workspace = summary.get("workspaces") or {}
        return {
            "kind": kind,
            "destination": destination,
            "workspaces": list(names),
            "size": len(names),
            "parallel": parallel if kind == "fleet" else 1,
            "run": rep + 1,
            "wall_seconds": measured.wall_seconds,
            "cpu_seconds": measured.cpu_seconds,
            "peak_rss_mb": measured.peak_rss_mb,
            "peak_pss_mb": measured.peak_pss_mb,
            "largest_process_rss_mb": measured.largest_process_rss_mb,
            "processes": measured.processes,
            "root_peak_rss_mb": measured.root_peak_rss_mb,
            "root_cpu_seconds": measured.root_cpu_seconds,
            "rss_samples": measured.samples,
            "sync_seconds": summary.get("seconds"),
            "workspace_seconds": {n: w.get("seconds") for n, w in per_workspace.items()},
            "rows_written": (
                sum(w.get("rows_written") or 0 for w in per_workspace.values())
                if per_workspace
                else summary.get("rows_written")
            ),
        }

    def run(self) -> list[dict[str, Any]]:
        opts = self.options
        largest = max(opts.workspaces)
        names = [workspace_name(i) for i in range(largest)]
        for rep in range(opts.runs):
            for destination in opts.destinations:
                self.log(f"run {rep + 1}/{opts.runs} on {destination}: each workspace alone")
                for name in names:
                    self.measure("single", destination, [name], rep, 1)
                self.log(f"run {rep + 1}/{opts.runs} on {destination}: fleets")
                for size in opts.workspaces:
                    self._fleet(destination, names[:size], rep, opts.parallel)
                for parallel in opts.sizing if largest > 1 else []:
                    self._fleet(destination, names, rep, parallel)
        return self.samples

    def _fleet(self, destination: str, names: Sequence[str], rep: int, parallel: int) -> None:
        """A fleet that fails is recorded as failed (with its error) and left out of the
        medians; the other measurements go on."""
        try:
            self.measure("fleet", destination, names, rep, parallel)
        except RuntimeError as exc:
            self.log(f"  FAILED: {exc}")
            self.failures.append(
                {
                    "destination": destination,
                    "size": len(names),
                    "parallel": parallel,
                    "run": rep + 1,
                    "error": str(exc)[-3000:],
                }
            )


@contextlib.contextmanager
def simulators(options: FleetOptions, count: int) -> Iterator[list[SimulatorHandle]]:
    """`count` workspaces served by one simulator process (`--workspaces`), workspace i with
    seed `seed + i`, all with the same latency."""
    scale, extra = simulator_scale(options.scale)
    extra = [*extra, "--workspaces", str(count)]
    with running_simulator(
        seed=options.seed, scale=scale, latency_ms=options.latency_ms, admin=True, extra_args=extra
    ) as sim:
        yield [sim.workspace(i) for i in range(count)]


def warm(sims: Sequence[SimulatorHandle], max_workers: int) -> float:
    """One floor walk of every simulator, all at once, before anything is measured: a
    simulator builds a page's rows on its first read, so without this the first sync of each
    workspace (a single, in the first repetition) would pay the simulator's cold CPU on the
    shared cores and the later ones would not."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(sims)) as pool:
        walks = [FloorWalk(s.base_url, s.read_key, max_workers, log_pages=None) for s in sims]
        list(pool.map(lambda walk: walk.run(), walks))
    return round(time.monotonic() - started, 1)


def run_fleet_bench(options: FleetOptions) -> dict[str, Any]:
    """Starts the simulators (and the server), measures, returns the result document."""
    root = Path(tempfile.mkdtemp(prefix="drone-bench-fleet-"))
    started = time.monotonic()
    context: dict[str, Any] = {
        "load_average_at_start": os.getloadavg(),
        "code_at_start": code_version(),
    }
    try:
        with contextlib.ExitStack() as stack:
            postgres = None
            if "postgres" in options.destinations:
                postgres = stack.enter_context(start_postgres())
            sims = stack.enter_context(simulators(options, max(options.workspaces)))
            counts = [sim.counts() for sim in sims]
            if options.warm:
                context["warm_seconds"] = warm(sims, options.max_workers)
            if not options.quiet:
                print(f"{len(sims)} workspaces, one simulator, {options.scale}", file=sys.stderr)
            bench = FleetBench(options, sims, root, postgres)
            samples = bench.run()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    context["workspace_counts"] = counts
    context["failures"] = bench.failures
    return build_fleet_document(options, samples, context, time.monotonic() - started)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_fleet_args(argv)
    output = options.output or Path("bench/results") / (
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-fleet-{options.scale}-{options.latency_ms}ms"
        f"-{'-'.join(options.destinations)}.json"
    )
    try:
        document = run_fleet_bench(options)
    except PostgresUnavailable as exc:
        print(f"cannot run the fleet on postgres: {exc}", file=sys.stderr)
        return 2
    return write_result(output, document, format_fleet(document))


if __name__ == "__main__":
    raise SystemExit(main())
