"""`drone-sync listen`: reads the secret, opens the spool, binds, and serves until a signal.

The one owner of the receiver's lifecycle: it opens the spool and closes it after uvicorn's
graceful shutdown (SIGINT/SIGTERM: stop accepting, finish the requests in flight), so every
acknowledged event is on disk when the process exits.
"""

from __future__ import annotations

import argparse
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dlt
import uvicorn

from drone_ops_sync.sources.drone_ops import ConfigError
from drone_ops_sync.sources.drone_ops.internal import register_secret

from ..defaults import MODEL_DESTINATIONS, WEBHOOK_SECRET_KEY
from ..exit_codes import EXIT_BUSY, EXIT_OK
from ..publishing import command_snapshot_plan
from ..run.destination import check_creatable, check_target
from ..run.target import Target
from .app import EVENTS_PATH, UNSIGNED_WARNING, Receiver, build_app
from .apply import Applier
from .marts import MartsFollower
from .signing import signing_key
from .spool import Spool, SpoolBusy, segment_name

if TYPE_CHECKING:
    from ..console.output import Output
    from ..run.signals import SignalStop

SPOOL_FOLDER = "events"
"""The default spool's folder inside the warehouse's sync folder (`.drone_sync/<file>/`)."""

log = logging.getLogger(__name__)


def read_webhook_secrets() -> tuple[str, ...]:
    """The shared secret (`sources.drone_ops.webhook_secret`, or a list during a rotation),
    registered for redaction; none means unsigned mode. Each is checked here, so a wrong one
    stops the start (exit 2) instead of refusing every delivery."""
    name = WEBHOOK_SECRET_KEY
    raw: Any = dlt.secrets.get(name)
    if raw is None:
        return ()
    values = raw if isinstance(raw, list | tuple) else [raw]
    secrets = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(name, "must be a string or a list of strings (value not shown)")
        register_secret(value)
        secret = value.strip()
        if not secret:
            raise ConfigError(name, "is empty; set the shared secret or remove the setting")
        register_secret(secret)
        try:
            signing_key(secret)
        except ValueError as exc:
            raise ConfigError(name, f"{exc}; value not shown") from None
        secrets.append(secret)
    return tuple(secrets)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before serving so `--port 0` can report the port taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError("--host/--port", f"cannot listen on {host}:{port}: {exc}") from None
    sock.listen(1024)
    return sock


def listen_command(args: argparse.Namespace, output: Output, stop: SignalStop) -> int:
    """Serves until SIGINT/SIGTERM; prints `url=<base url>` on stdout once listening."""
    logging.getLogger(__package__ or "drone_ops_sync.pipelines.listen").setLevel(logging.INFO)
    secrets = read_webhook_secrets()
    target = Target(destination=args.destination, database=args.database, dataset=args.dataset)
    # by default beside the warehouse, in its sync folder: `.drone_sync/<file>/events/`
    spool_dir: Path = args.spool if args.spool is not None else target.sync_dir() / SPOOL_FOLDER
    # what the receiver writes is checked before anything is created: the spool, and the
    # warehouse it applies events to
    check_creatable("--spool", spool_dir / segment_name(0))
    if args.apply_every > 0:
        check_target(target)
    try:
        spool = Spool(spool_dir)
    except SpoolBusy as exc:
        return output.fail("spool busy", str(exc), EXIT_BUSY)
    receiver = Receiver(spool=spool, secrets=secrets)
    if args.apply_every > 0:
        receiver.applier = Applier(target, spool, args.apply_every)
        receiver.applier.follower = marts_follower(target, args)
    try:
        sock = bind(args.host, args.port)
        with sock:
            if receiver.applier is not None:
                receiver.applier.start()
                if receiver.applier.follower is not None:
                    receiver.applier.follower.start()
            _serve(receiver, sock, stop)
    finally:
        if receiver.applier is not None:
            # the batch in progress completes; what is left is applied at the next start
            receiver.applier.stop()
            if receiver.applier.follower is not None:
                receiver.applier.follower.stop()
        spool.close()
    log.info("receiver stopped; spool %s closed", spool.directory)
    return stop.exit_code if stop.received is not None else EXIT_OK


def marts_follower(target: Target, args: argparse.Namespace) -> MartsFollower | None:
    """The follower of `--follow-marts`, or None (off, or a destination without models); its
    snapshot is checked here, so a wrong `--snapshot` stops the start (exit 2)."""
    if args.follow_marts <= 0 or target.destination not in MODEL_DESTINATIONS:
        return None
    snapshot = command_snapshot_plan(target.models_target(), args)
    return MartsFollower(target, snapshot, args.follow_marts)


def _serve(receiver: Receiver, sock: socket.socket, stop: SignalStop) -> None:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}"
    spool = receiver.spool
    size, segments = spool.disk_usage()
    log.info(
        "listening on %s%s; spool %s knows %d delivery ids (%d segments, %d bytes; %d bytes"
        " of a torn last line cut); signatures %s",
        url,
        EVENTS_PATH,
        spool.directory,
        len(spool),
        segments,
        size,
        spool.cut_bytes,
        "checked" if receiver.signed else "NOT CHECKED",
    )
    if not receiver.signed:
        log.warning(UNSIGNED_WARNING)
    print(f"url={url}", flush=True)
    config = uvicorn.Config(
        build_app(receiver),
        lifespan="off",
        access_log=False,
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )
    with stop.cooperating():
        uvicorn.Server(config).run(sockets=[sock])
