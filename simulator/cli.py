"""Command line: `sim serve` for the product CLI and `python -m simulator serve`."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

from .app import build_app
from .delivery_faults import parse_delivery_faults
from .events import DEFAULT_WORKERS, DELIVERY_TIMEOUT_S, ORDERS, DeliveryOptions, parse_retry_delays
from .faults import parse_faults, parse_latency
from .generator import SCALES
from .many import ManyWorkspaces, workspace_url
from .server import ServeConfig, base_url_of, bind, build_runtime, make_server
from .signing import secret_key

T = TypeVar("T")


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {text!r}") from None


def _parsed_by(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse `type`: what `parse` makes of the text, its ValueError shown as the usage
    error it explains."""

    def parsed(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parsed


def _checked_by(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse `type` that keeps the text once `parse` accepts it (the server parses the
    spec again where it is used)."""
    check = _parsed_by(parse)

    def checked(text: str) -> str:
        check(text)
        return text

    return checked


_faults = _checked_by(parse_faults)
_latency = _checked_by(parse_latency)
_delivery_faults = _checked_by(parse_delivery_faults)
_webhook_secret = _checked_by(secret_key)
_retry_delays = _parsed_by(parse_retry_delays)


def add_delivery_arguments(p: argparse.ArgumentParser) -> None:
    """How webhook deliveries are sent: signing, retries, concurrency, order and faults."""
    p.add_argument(
        "--webhook-secret",
        action="append",
        type=_webhook_secret,
        metavar="SECRET",
        help="sign every webhook's deliveries with it (whsec_<base64>, as Standard Webhooks "
        "issues them); given twice, sign with both (rotation)",
    )
    p.add_argument(
        "--delivery-retry-delays",
        type=_retry_delays,
        default=(),
        metavar="S,S,...",
        help="seconds before each retry of a failed attempt, e.g. 0.2,0.5,1,2 (default: none)",
    )
    p.add_argument(
        "--delivery-timeout",
        type=float,
        default=DELIVERY_TIMEOUT_S,
        help=f"seconds per delivery attempt (default {DELIVERY_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--delivery-workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"sender threads (default {DEFAULT_WORKERS})",
    )
    p.add_argument(
        "--delivery-order",
        choices=ORDERS,
        default=ORDERS[0],
        help="what is delivered in order: each project's events per webhook (default), "
        "all of a webhook's events, or nothing",
    )
    p.add_argument(
        "--delivery-faults",
        type=_delivery_faults,
        help='e.g. "duplicate:0.1,reorder:1x,delay:0.2:300,drop_first_attempt:2x"',
    )


def delivery_options(args: argparse.Namespace) -> DeliveryOptions:
    return DeliveryOptions(
        retry_delays=tuple(args.delivery_retry_delays),
        timeout=args.delivery_timeout,
        workers=args.delivery_workers,
        order=args.delivery_order,
        faults=args.delivery_faults,
        secrets=tuple(args.webhook_secret or ()),
    )


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
    p.add_argument(
        "--workspaces",
        type=int,
        default=1,
        help="serve N workspaces, workspace n under /w/n with keys KEY-n (seeds SEED+n)",
    )
    add_delivery_arguments(p)
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
        delivery=delivery_options(args),
        workspaces=args.workspaces,
    )
    try:
        if cfg.workspaces > 1:
            many = ManyWorkspaces(cfg, cfg.workspaces)
            app: Any = many
            read_key, full_key = f"{many.read_key}-{{n}}", f"{many.full_key}-{{n}}"
            stop = many.stop
        else:
            rt = build_runtime(cfg)
            rt.worker.start()
            app, read_key, full_key, stop = build_app(rt), rt.read_key, rt.full_key, rt.worker.stop
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sock = bind(cfg.host, cfg.port)
    server = make_server(app)
    # uvicorn re-raises the signal it caught after shutting down; a no-op handler makes that
    # re-raise harmless so the process exits 0.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    base_url = base_url_of(sock, cfg.host)
    if cfg.workspaces > 1:
        base_url = workspace_url(base_url, "{n}")
    sys.stdout.write(f"base_url={base_url}\nread_key={read_key}\nfull_key={full_key}\n")
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        stop()
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a seeded workspace over HTTP")
    add_serve_arguments(serve)
    args = parser.parse_args(argv)
    return int(args.sim_func(args))
