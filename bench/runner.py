"""Runs the benchmark: one simulator subprocess, every variant in a fresh child process."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.testing import SimulatorHandle, running_simulator

REPO_ROOT = Path(__file__).resolve().parent.parent
VARIANT_CHOICES = ("ours", "baseline", "tuned", "floor")
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
CHURN = {"update_fraction": 0.01, "delete_fraction": 0.001}
# `ours_rolling`: a quiet re-sync with the opt-in rolling job refresh of this many slices
ROLLING_SLICES = 8


@dataclass
class Options:
    """What one benchmark invocation measures."""

    scale: str = "small"
    latency_ms: int = 0
    runs: int = 3
    baseline_runs: int | None = None
    only: Sequence[str] = VARIANT_CHOICES
    max_workers: int = 16
    seed: int = 42
    counts: dict[str, int] = field(default_factory=dict)
    new_deliveries_per_webhook: int = 50
    models: bool = True
    baseline_from: Path | None = None
    output: Path | None = None
    quiet: bool = False


@dataclass
class Sample:
    """One measured run of a variant."""

    variant: str
    seconds: float
    requests: int
    peak_rss_mb: float
    process_seconds: float
    endpoint_requests: dict[str, int]
    detail: dict[str, Any]
    code: str = ""


def code_version() -> str:
    """The checkout's HEAD, with "+dirty" when the measured code differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "sources", "pipelines", "simulator", "bench")
    return f"{head}+dirty" if dirty else head


class WorkerError(RuntimeError):
    """A variant's child process failed."""


def run_worker(spec: dict[str, Any], workdir: Path) -> tuple[dict[str, Any], float, float]:
    """Runs `python -m bench.worker` in `workdir`; returns its result, peak RSS (MB), wall s.

    The result also gets `cpu_seconds`: the child's user + system CPU time (whole process).

    The worker runs with `workdir` as its current directory so the repository's `.dlt/` config
    (tuned for our source) does not leak into the rest_api baseline.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    result_path = workdir / f"result-{spec['variant']}-{time.monotonic_ns()}.json"
    spec = {**spec, "result_path": str(result_path)}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    for name in list(env):
        # only what the worker sets itself may configure dlt
        if name.startswith(("EXTRACT__", "NORMALIZE__", "LOAD__", "DATA_WRITER__")):
            del env[name]
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.worker", json.dumps(spec)],
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


class Bench:
    """One benchmark invocation against one simulator."""

    def __init__(self, options: Options, sim: SimulatorHandle, root: Path) -> None:
        self.options = options
        self.sim = sim
        self.root = root
        self.samples: list[Sample] = []
        self._count = 0

    def log(self, message: str) -> None:
        if not self.options.quiet:
            print(message, file=sys.stderr, flush=True)

    def measure(self, variant: str, label: str, extra: dict[str, Any] | None = None) -> Sample:
        """Runs a variant once in a fresh process; requests come from the simulator's stats."""
        self._count += 1
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
        code = code_version()
        before = self.sim.stats()["requests"]
        detail, rss, wall = run_worker(spec, workdir)
        detail["database"] = spec["database"]
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
            f"  {label:<16} {sample.seconds:8.2f} s  {sample.requests:>7} requests"
            f"  {sample.peak_rss_mb:7.1f} MB"
        )
        return sample

    def run(self) -> dict[str, Any]:
        """Every selected variant, `runs` times each, interleaved so drift hits all alike."""
        opts = self.options
        only = set(opts.only)
        baseline_runs = opts.runs if opts.baseline_runs is None else opts.baseline_runs
        last_ours_db: Path | None = None
        for rep in range(opts.runs):
            self.log(f"run {rep + 1}/{opts.runs}")
            if "floor" in only:
                self.measure("floor", "floor")
            if "ours" in only:
                first = self.measure("ours", "ours_initial")
                last_ours_db = Path(first.detail["database"])
                self.measure("ours", "ours_nochange", self._same_db(last_ours_db))
                self.measure(
                    "ours",
                    "ours_rolling",
                    {**self._same_db(last_ours_db), "job_refresh_slices": ROLLING_SLICES},
                )
            if "floor" in only:
                self.measure("floor_nochange", "floor_nochange")
            if rep < baseline_runs:
                if "tuned" in only:
                    self.measure("tuned", "tuned")
                if "baseline" in only and opts.baseline_from is None:
                    self.measure("baseline", "baseline")
        models: dict[str, Any] | None = None
        if "ours" in only and last_ours_db is not None:
            if opts.models:
                self.log("model build")
                detail, rss, _ = run_worker(
                    {"variant": "models", "database": str(last_ours_db)},
                    self.root / "models",
                )
                models = {**detail, "peak_rss_mb": round(rss, 1)}
                self.log(f"  models           {detail['seconds']:8.2f} s  ok={detail['ok']}")
            for rep in range(opts.runs):
                self.log(f"churn {rep + 1}/{opts.runs}")
                churned = self.sim.churn(
                    seed=1000 + rep,
                    new_deliveries_per_webhook=opts.new_deliveries_per_webhook,
                    **CHURN,
                )
                sample = self.measure("ours", "ours_churn", self._same_db(last_ours_db))
                sample.detail["churn"] = churned
        return {"samples": self.samples, "models": models}

    @staticmethod
    def _same_db(database: Path | None) -> dict[str, Any]:
        assert database is not None
        return {"database": str(database), "pipelines_dir": str(database.parent / "pipelines")}


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def summarize(samples: Sequence[Sample]) -> dict[str, dict[str, Any]]:
    """Medians per variant label."""
    by_label: dict[str, list[Sample]] = {}
    for sample in samples:
        by_label.setdefault(sample.variant, []).append(sample)
    out: dict[str, dict[str, Any]] = {}
    for label, group in by_label.items():
        out[label] = {
            "runs": len(group),
            "seconds": median([s.seconds for s in group]),
            "seconds_all": [round(s.seconds, 3) for s in group],
            "requests": int(median([s.requests for s in group])),
            "requests_all": [s.requests for s in group],
            "peak_rss_mb": median([s.peak_rss_mb for s in group]),
            "peak_rss_mb_max": max(s.peak_rss_mb for s in group),
            "cpu_seconds": median([s.detail.get("cpu_seconds", float("nan")) for s in group]),
        }
    return out


def run_bench(options: Options) -> dict[str, Any]:
    """Starts the simulator, measures, and returns the result document."""
    from .report import build_document

    extra: list[str] = []
    scale = options.scale
    counts = dict(SCALE_COUNTS.get(scale, {}))
    counts.update(options.counts)
    sim_scale = "large" if scale in (*SCALE_COUNTS, "custom") else scale
    for key, value in counts.items():
        extra += [f"--{key}", str(value)]
    root = Path(tempfile.mkdtemp(prefix="drone-bench-"))
    started = time.monotonic()
    load_at_start = os.getloadavg()
    code_at_start = code_version()
    try:
        with running_simulator(
            seed=options.seed,
            scale=sim_scale,
            latency_ms=options.latency_ms,
            admin=True,
            extra_args=extra,
        ) as sim:
            workspace = sim.counts()
            if not options.quiet:
                print(f"simulator {sim.base_url} scale={scale} {workspace}", file=sys.stderr)
            measured = Bench(options, sim, root).run()
            measured["load_average_at_start"] = load_at_start
            measured["code_at_start"] = code_at_start
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return build_document(options, workspace, measured, time.monotonic() - started)
