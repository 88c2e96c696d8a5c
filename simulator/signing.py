"""Signs a webhook delivery the way docs/events.md describes (Standard Webhooks style).

The spec leaves signing open ("not shown"); the project's reading is HMAC-SHA256 over
`{webhook-id}.{webhook-timestamp}.{body}`, sent as `webhook-signature: v1,<base64>`, keyed as
Standard Webhooks says: a secret is `whsec_<base64>` and the key is that base64 decoded, so what
the simulator sends verifies with the official `standardwebhooks` library. This is the
simulator's own reading of that document, written apart from the receiver's verifier
(`pipelines/listen/signing.py`), so a test that checks one against the other checks the
document, not one function against itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import threading
import time
from collections.abc import Sequence

SIGNATURE_VERSION = "v1"
PREFIX = "whsec_"


def secret_key(secret: str) -> bytes:
    """The key of a `whsec_<base64>` secret (padding optional); ValueError for anything else,
    without quoting it: signing with a plain string's bytes would produce signatures no
    standard receiver accepts."""
    body = secret.removeprefix(PREFIX) if secret.startswith(PREFIX) else None
    if body is None:
        raise ValueError(f"a secret must be {PREFIX} followed by base64 (Standard Webhooks)")
    body = body.rstrip("=")
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise ValueError(f"a secret must be {PREFIX} followed by base64 (Standard Webhooks)")
    return key


def signature(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`, keyed by the secret's key."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
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


def sign_all(
    secrets: Sequence[str], delivery_id: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """The headers signed with every secret, signatures space-separated: how a sender rotating
    its secret signs with the new and the old one, so receivers holding either accept it."""
    when = int(time.time()) if timestamp is None else timestamp
    return {
        "webhook-id": delivery_id,
        "webhook-timestamp": str(when),
        "webhook-signature": " ".join(signature(s, delivery_id, when, body) for s in secrets),
    }


def check_secrets(secrets: object) -> tuple[str, ...]:
    """A list of Standard Webhooks secrets, else ValueError: an empty secret would sign with no
    key, and one not in the standard form with a key no receiver expects."""
    if not isinstance(secrets, list | tuple) or not all(isinstance(s, str) and s for s in secrets):
        raise ValueError("secrets must be a list of non-empty strings")
    for secret in secrets:
        secret_key(secret)
    return tuple(secrets)


class WebhookSecrets:
    """Which secrets sign a webhook's deliveries: a default for every webhook (the CLI's
    `--webhook-secret`), and per-webhook overrides set through the admin API.

    The spec does not say how a secret is issued; the simulator takes it from whoever runs it.
    Read at each attempt, so a rotation applies to the retries of deliveries already queued.
    No secret means unsigned deliveries, as before signing existed.
    """

    def __init__(self, default: Sequence[str] = ()) -> None:
        self._lock = threading.Lock()
        self._default = check_secrets(list(default))
        self._by_webhook: dict[str, tuple[str, ...]] = {}

    def set(self, secrets: Sequence[str] | None, webhook_id: str | None = None) -> int:
        """Replace the default (no `webhook_id`) or one webhook's secrets; None drops that
        webhook's override. Returns how many secrets now sign that webhook (or the default)."""
        with self._lock:
            if webhook_id is None:
                self._default = check_secrets(list(secrets or []))
                return len(self._default)
            if secrets is None:
                self._by_webhook.pop(webhook_id, None)
                return len(self._default)
            self._by_webhook[webhook_id] = check_secrets(list(secrets))
            return len(self._by_webhook[webhook_id])

    def for_webhook(self, webhook_id: str) -> tuple[str, ...]:
        with self._lock:
            return self._by_webhook.get(webhook_id, self._default)
