"""Signs a webhook delivery the way docs/events.md describes (Standard Webhooks style).

The spec leaves signing open ("not shown"); the project's reading is HMAC-SHA256 over
`{webhook-id}.{webhook-timestamp}.{body}` with the shared secret, sent as
`webhook-signature: v1,<base64>`. This is the simulator's own reading of that document,
written apart from the receiver's verifier (`pipelines/listen/signing.py`), so a test that
checks one against the other checks the document, not one function against itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

SIGNATURE_VERSION = "v1"


def signature(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`, keyed by the secret's UTF-8."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def sign(
    secret: str, delivery_id: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """The three headers of a signed delivery; `timestamp` (unix seconds) defaults to now."""
    when = int(time.time()) if timestamp is None else timestamp
    return {
        "webhook-id": delivery_id,
        "webhook-timestamp": str(when),
        "webhook-signature": signature(secret, delivery_id, when, body),
    }
