"""`python -m bench`: ours vs dlt's rest_api source vs the raw HTTP floor.

Examples:
    python -m bench --scale small --runs 1                 # CI smoke, under a minute
    python -m bench --scale large --latency-ms 50          # the real figures
    python -m bench --scale large --latency-ms 50 --baseline-from bench/results/tenth-0ms.json
    python -m bench --scale small --only ours,postgres --no-models   # DuckDB vs PostgreSQL
    python -m bench fleet --scale small --workspaces 1,4,16 --destination duckdb,postgres
        # a fleet of workspaces against each alone (bench/fleet.py; `fleet --help`)
    python -m bench fleet-steady --workspaces 100 --destination duckdb,postgres
        # one fleet run after run on one warehouse: initial, quiet, changed (fleet_steady.py)
    python -m bench http --requests 2000 --rounds 5
        # CPU per request of each HTTP engine, ours and bare (bench/http_cost.py)
    python -m bench --scale small --only ours,floor,cli --against ../previous
        # the same variants of another checkout (its own .venv), alternately: ours/previous
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from testkit.postgres import PostgresUnavailable

from .measurement import DEFAULT_VARIANTS, VARIANT_CHOICES, Options
from .report import format_table, write_result
from .runner import run_bench

COUNT_KEYS = ("projects", "jobs-per-project", "members", "webhooks", "logs-per-webhook")


def _only(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(VARIANT_CHOICES))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(VARIANT_CHOICES)}")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument(
        "--scale", choices=("small", "tenth", "half", "large", "custom"), default="small"
    )
    p.add_argument("--latency-ms", type=int, default=0, help="added per /v1 request (0 or 50)")
    p.add_argument("--runs", type=int, default=3, help="repetitions per variant (medians)")
    p.add_argument(
        "--baseline-runs", type=int, help="repetitions of the two rest_api variants (default runs)"
    )
    p.add_argument(
        "--only",
        type=_only,
        default=list(DEFAULT_VARIANTS),
        help=f"e.g. ours,floor (default {','.join(DEFAULT_VARIANTS)}; postgres is opt-in)",
    )
    p.add_argument("--max-workers", type=int, default=16, help="ours' and the floor's concurrency")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--new-deliveries", type=int, default=50, help="per webhook, per churn")
    p.add_argument("--no-models", action="store_true", help="skip the model build timing")
    p.add_argument(
        "--baseline-from",
        type=Path,
        help="do not run the default rest_api baseline; extrapolate it from a result file of"
        " another scale/latency (CPU part scaled by rows, + requests x latency; see docs)",
    )
    for key in COUNT_KEYS:
        p.add_argument(f"--{key}", type=int, help="simulator count (with --scale custom)")
    p.add_argument("--output", type=Path, help="default bench/results/<timestamp>.json")
    p.add_argument("--quiet", action="store_true")
    p.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="run N CPU hog processes (one core each) beside every variant, as on a shared runner",
    )
    p.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="also run the ours and cli variants of another checkout (a git worktree with its"
        " own .venv), alternately with these, and print ours/previous for each",
    )
    args = p.parse_args(argv)
    if args.against is not None and not (args.against / ".venv" / "bin" / "python").exists():
        p.error(f"--against: {args.against} has no .venv/bin/python (create it and install)")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["fleet-steady"]:
        from .fleet_steady import main as steady_main

        return steady_main(argv[1:])
    if argv[:1] == ["fleet"]:
        from .fleet import main as fleet_main

        return fleet_main(argv[1:])
    if argv[:1] == ["http"]:
        from .http_cost import main as http_main

        return http_main(argv[1:])
    args = parse_args(argv)
    counts = {
        key: getattr(args, key.replace("-", "_"))
        for key in COUNT_KEYS
        if getattr(args, key.replace("-", "_")) is not None
    }
    output = args.output or Path("bench/results") / (
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{args.scale}-{args.latency_ms}ms.json"
    )
    options = Options(
        scale=args.scale,
        latency_ms=args.latency_ms,
        runs=max(1, args.runs),
        baseline_runs=args.baseline_runs,
        only=args.only,
        max_workers=args.max_workers,
        seed=args.seed,
        counts=counts,
        new_deliveries_per_webhook=args.new_deliveries,
        models=not args.no_models,
        baseline_from=args.baseline_from,
        output=output,
        quiet=args.quiet,
        busy=max(0, args.busy),
        against=args.against.resolve() if args.against is not None else None,
    )
    try:
        document = run_bench(options)
    except PostgresUnavailable as exc:
        # the postgres variant without the `test` extra: one line saying what to install
        print(f"cannot run the postgres variant: {exc}", file=sys.stderr)
        return 2
    return write_result(output, document, format_table(document))


if __name__ == "__main__":
    raise SystemExit(main())
