"""Checks a delivery's signature (docs/events.md, "Signing").

The API's spec leaves signing open; the project reads it the Standard Webhooks way:
`webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature`
(`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`). The HMAC key is what the standard
says it is: the base64 after the secret's `whsec_` prefix, decoded, so a secret a vendor issues
(and the official `standardwebhooks` library's signatures) verify as they are. Several
space-separated signatures are accepted so a secret can be rotated without lost deliveries;
the timestamp must be within `TOLERANCE_SECONDS` of now, so a captured delivery cannot be
replayed later; signatures are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

SECRET_PREFIX = "whsec_"
TOLERANCE_SECONDS = 300
"""How far a delivery's timestamp may be from the receiver's clock, either way."""
SIGNATURE_VERSION = "v1"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"


class SignatureError(Exception):
    """Why a delivery is refused (401); the message never quotes a signature or the secret."""


def signing_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret, `whsec_<base64>` (padding optional);
    anything else raises ValueError, never quoting the value. A plain string is refused rather
    than used as raw bytes: a sender following the standard would sign with other key bytes."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"is not a Standard Webhooks secret ({SECRET_PREFIX}<base64>)")
    encoded = secret[len(SECRET_PREFIX) :].rstrip("=")
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"is not a Standard Webhooks secret: what follows {SECRET_PREFIX} is not base64"
        ) from None
    if not key:
        raise ValueError(f"is not a Standard Webhooks secret: no key after {SECRET_PREFIX}")
    return key


def expected_signature(secret: str, delivery_id: str, timestamp: str, body: bytes) -> bytes:
    """The raw HMAC-SHA256 digest the sender should have sent for these values."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    return hmac.new(signing_key(secret), signed, hashlib.sha256).digest()


def verify(
    secrets: tuple[str, ...],
    headers: Mapping[str, str],
    body: bytes,
    now: float,
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
    if abs(now - seconds) > TOLERANCE_SECONDS:
        raise SignatureError(
            f"{TIMESTAMP_HEADER} is more than {TOLERANCE_SECONDS:g} s from the receiver's clock"
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
