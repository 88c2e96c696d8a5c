"""The receiver's HTTP side: POST /events and GET /health (docs/events.md, "The receiver").

Every refusal is one line of text with its status (413 too large, 400 not an event, 401 bad
signature); an accepted event is answered 202 only after the spool has fsynced it, a duplicate
200. One log line per delivery names its id, kind and outcome, never its body or the secret.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .quarantine import count_quarantined
from .signing import SignatureError, verify
from .spool import Spool

EVENTS_PATH = "/events"
HEALTH_PATH = "/health"
MAX_BODY_BYTES = 256 * 1024
"""A project event is a few KiB; anything far larger is refused before it is read whole."""
EVENT_FIELDS: dict[str, tuple[type, ...]] = {
    "delivery_id": (str,),
    "event": (str,),
    "timestamp": (int, float),
    "workspace_id": (str,),
    "data": (dict,),
}
"""The payload's fields (spec part 6) and the JSON types each must have."""
UNSIGNED_WARNING = (
    "UNSIGNED MODE: no sources.drone_ops.webhook_secret is set, so events are accepted"
    " without checking a signature; anyone who can reach this port can write to the spool"
)

log = logging.getLogger(__name__)


@dataclass
class Receiver:
    """What the app serves with: the spool, the secrets (empty: unsigned mode) and counts."""

    spool: Spool
    secrets: tuple[str, ...]
    received: int = 0
    duplicates: int = 0
    refused: int = 0
    applier: Any = None
    """The `apply.Applier` applying the spool to the warehouse; None with `--apply-every 0`."""

    @property
    def signed(self) -> bool:
        return bool(self.secrets)


class Refused(Exception):
    """A delivery answered with `status` and one line; nothing was spooled."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def build_app(receiver: Receiver) -> Starlette:
    async def events(request: Request) -> Response:
        try:
            event = await _checked_event(request, receiver)
        except Refused as refused:
            receiver.refused += 1
            log.warning("event refused: %s %s", refused.status, refused)
            return PlainTextResponse(f"{refused}\n", status_code=refused.status)
        received_at = int(time.time() * 1000)
        try:
            # in the event loop, not a worker thread: appends are one at a time under the
            # spool's lock anyway (each waits for its fsync), so a thread would only add the
            # CPU of its hand-offs (docs/events.md)
            added = receiver.spool.append(event, received_at, receiver.signed)
        except OSError as exc:  # a full disk: not acknowledged, so the sender retries it
            log.warning("event not spooled: %s %s", event["delivery_id"], exc)
            return PlainTextResponse(f"spool cannot write: {exc}\n", status_code=503)
        what = f"{event['delivery_id']} {event['event']}"
        if not added:
            receiver.duplicates += 1
            log.info("event duplicate: %s (already spooled)", what)
            return JSONResponse({"status": "duplicate", "delivery_id": event["delivery_id"]})
        receiver.received += 1
        if receiver.signed:
            log.info("event accepted: %s", what)
        else:
            log.warning("event accepted UNSIGNED: %s", what)
        return JSONResponse(
            {"status": "accepted", "delivery_id": event["delivery_id"]}, status_code=202
        )

    async def health(request: Request) -> Response:
        spool, applier = receiver.spool, receiver.applier
        size, segments = spool.disk_usage()
        return JSONResponse(
            {
                "status": "ok",
                "events_received": receiver.received,
                "duplicates": receiver.duplicates,
                "refused": receiver.refused,
                "events_in_spool": len(spool),
                "spool": str(spool.directory),
                "spool_bytes": size,
                "spool_segments": segments,
                "quarantined": (
                    applier.stats.quarantined if applier else count_quarantined(spool.directory)
                ),
                "signed": receiver.signed,
                "applied": asdict(applier.stats) if applier else None,
                "marts": (asdict(applier.follower.stats) if applier and applier.follower else None),
            }
        )

    return Starlette(
        routes=[
            Route(EVENTS_PATH, events, methods=["POST"]),
            Route(HEALTH_PATH, health, methods=["GET"]),
        ]
    )


async def _checked_event(request: Request, receiver: Receiver) -> dict[str, Any]:
    """The delivery's event, bounded, parsed, shape-checked and (with a secret) verified."""
    body = await _bounded_body(request)
    try:
        event = json.loads(body)
    except ValueError:
        raise Refused(400, "body is not JSON") from None
    if not isinstance(event, dict):
        raise Refused(400, "body is not a JSON object")
    _check_fields(event)
    if receiver.signed:
        try:
            signed_id = verify(receiver.secrets, request.headers, body, time.time())
        except SignatureError as exc:
            raise Refused(401, str(exc)) from None
        if signed_id != event["delivery_id"]:
            raise Refused(401, "webhook-id does not match the body's delivery_id")
    return event


async def _bounded_body(request: Request) -> bytes:
    """The body, read no further than `MAX_BODY_BYTES` (a declared larger length is refused
    before reading anything)."""
    too_large = Refused(413, f"body is larger than {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _check_fields(event: dict[str, Any]) -> None:
    for name, types in EVENT_FIELDS.items():
        if name not in event:
            raise Refused(400, f"event has no {name}")
        value = event[name]
        if isinstance(value, bool) or not isinstance(value, types):
            wanted = " or ".join("object" if t is dict else t.__name__ for t in types)
            raise Refused(400, f"event's {name} is not {wanted}")
    if not event["delivery_id"]:
        raise Refused(400, "event's delivery_id is empty")
