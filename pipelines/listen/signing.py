"""Checks a delivery's signature (docs/events.md, "Signing").

The API's spec leaves signing open; the project reads it the Standard Webhooks way:
`webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature`
(`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed by the shared secret's UTF-8
bytes). Several space-separated signatures are accepted so a secret can be rotated without
lost deliveries; the timestamp must be within `TOLERANCE_SECONDS` of now, so a captured
delivery cannot be replayed later; signatures are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

TOLERANCE_SECONDS = 300
"""How far a delivery's timestamp may be from the receiver's clock, either way."""
SIGNATURE_VERSION = "v1"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"


class SignatureError(Exception):
    """Why a delivery is refused (401); the message never quotes a signature or the secret."""


def expected_signature(secret: str, delivery_id: str, timestamp: str, body: bytes) -> bytes:
    """The raw HMAC-SHA256 digest the sender should have sent for these values."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).digest()


def verify(
    secrets: tuple[str, ...],
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    tolerance: float = TOLERANCE_SECONDS,
) -> str:
    """Returns the signed `webhook-id` when some `v1` signature matches some secret; raises
    `SignatureError` naming what is missing, stale or wrong otherwise."""
    delivery_id = headers.get(ID_HEADER)
    timestamp = headers.get(TIMESTAMP_HEADER)
    sent = headers.get(SIGNATURE_HEADER)
    for name, value in ((ID_HEADER, delivery_id), (TIMESTAMP_HEADER, timestamp)):
        if not value:
            raise SignatureError(f"missing {name} header")
    if not sent:
        raise SignatureError(f"missing {SIGNATURE_HEADER} header")
    assert delivery_id is not None and timestamp is not None
    try:
        seconds = int(timestamp)
    except ValueError:
        raise SignatureError(f"{TIMESTAMP_HEADER} is not unix seconds") from None
    if abs(now - seconds) > tolerance:
        raise SignatureError(
            f"{TIMESTAMP_HEADER} is more than {tolerance:g} s from the receiver's clock"
        )
    candidates = _signatures(sent)
    if not candidates:
        raise SignatureError(f"no {SIGNATURE_VERSION} signature in {SIGNATURE_HEADER}")
    for secret in secrets:
        wanted = expected_signature(secret, delivery_id, timestamp, body)
        if any(hmac.compare_digest(wanted, given) for given in candidates):
            return delivery_id
    raise SignatureError("signature does not match")


def _signatures(header: str) -> list[bytes]:
    """The decoded `v1` signatures of a header; other versions and bad base64 are ignored."""
    found = []
    for part in header.split():
        version, _, encoded = part.partition(",")
        if version != SIGNATURE_VERSION or not encoded:
            continue
        try:
            found.append(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            continue
    return found
