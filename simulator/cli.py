"""Command line: `sim serve` for the product CLI and `python -m simulator serve`."""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import date

from .faults import parse_faults, parse_latency
from .generator import SCALES
from .server import ServeConfig, base_url_of, bind, build_runtime, make_server


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {text!r}") from None


def _faults(text: str) -> str:
    try:
        parse_faults(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _latency(text: str) -> str:
    try:
        parse_latency(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--scale", choices=sorted(SCALES), default="small")
    p.add_argument("--read-key", help="read_only API key (generated when omitted)")
    p.add_argument("--full-key", help="full_access API key (generated when omitted)")
    p.add_argument(
        "--faults", type=_faults, help='e.g. "429:0.10,503:0.05,reset:0.02,truncate:0.01"'
    )
    p.add_argument("--latency-ms", type=_latency, help="N or A-B milliseconds per /v1 request")
    p.add_argument("--admin", action="store_true", help="enable the /_admin API (full key)")
    p.add_argument(
        "--anchor-date", type=_date, help="generated data lies before it (default today UTC)"
    )
    p.add_argument("--horizon-days", type=int, default=365)
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    p.add_argument("--projects", type=int)
    p.add_argument("--jobs-per-project", type=int)
    p.add_argument("--members", type=int)
    p.add_argument("--webhooks", type=int)
    p.add_argument("--logs-per-webhook", type=int)
    p.set_defaults(sim_func=run_serve, func=run_serve)


def add_sim_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `sim serve` on the product CLI's subparsers."""
    sim = subparsers.add_parser("sim", help="run the local Drone Operations API simulator")
    sim_sub = sim.add_subparsers(dest="sim_command", required=True)
    serve = sim_sub.add_parser("serve", help="serve a seeded workspace over HTTP")
    add_serve_arguments(serve)


def run_serve(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; prints base_url and keys first, one per line."""
    cfg = ServeConfig(
        host=args.host,
        port=args.port,
        seed=args.seed,
        scale=args.scale,
        read_key=args.read_key,
        full_key=args.full_key,
        faults=args.faults,
        latency_ms=args.latency_ms,
        admin=args.admin,
        anchor_date=args.anchor_date,
        horizon_days=args.horizon_days,
        allow_remote=args.allow_remote,
        counts={
            "projects": args.projects,
            "jobs_per_project": args.jobs_per_project,
            "members": args.members,
            "webhooks": args.webhooks,
            "logs_per_webhook": args.logs_per_webhook,
        },
    )
    try:
        rt = build_runtime(cfg)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sock = bind(cfg.host, cfg.port)
    server = make_server(rt)
    rt.worker.start()
    # uvicorn re-raises the signal it caught after shutting down; a no-op handler makes that
    # re-raise harmless so the process exits 0.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    sys.stdout.write(
        f"base_url={base_url_of(sock, cfg.host)}\nread_key={rt.read_key}\nfull_key={rt.full_key}\n"
    )
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        rt.worker.stop()
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a seeded workspace over HTTP")
    add_serve_arguments(serve)
    args = parser.parse_args(argv)
    return int(args.sim_func(args))
