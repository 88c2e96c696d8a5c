"""The signing scheme of docs/events.md: a known vector computed here with hmac/hashlib, the
simulator's `sign` checked by the receiver's `verify`, both checked against the official
`standardwebhooks` library, the secret's form, rotation, staleness and refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

from drone_ops_sync.pipelines.listen.signing import SignatureError, signing_key, verify
from drone_ops_sync.simulator.signing import check_secrets, secret_key, sign, sign_all, signature

SECRET = "whsec_c2lnbmluZy10ZXN0LWtleS0wMTIzNDU2Nzg5YQ=="
OLD_SECRET = "whsec_b2xkLXNlY3JldC1rZXktMS0wMTIzNDU2Nzg5YQ=="
NEW_SECRET = "whsec_bmV3LXNlY3JldC1rZXktMi0wMTIzNDU2Nzg5YQ=="
BODY = b'{"delivery_id":"dlv_1","event":"project.created"}'
NOW = 1_700_000_000


def _reference(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    message = delivery_id.encode() + b"." + str(timestamp).encode() + b"." + body
    key = base64.b64decode(secret.split("_", 1)[1])
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def test_known_vector() -> None:
    expected = _reference(SECRET, "dlv_1", NOW, BODY)
    assert signature(SECRET, "dlv_1", NOW, BODY) == expected
    headers = {"webhook-id": "dlv_1", "webhook-timestamp": str(NOW), "webhook-signature": expected}
    assert verify((SECRET,), headers, BODY, now=NOW) == "dlv_1"


def test_simulator_signature_verifies() -> None:
    headers = sign(SECRET, "dlv_2", BODY, NOW)
    assert verify((SECRET,), headers, BODY, now=NOW + 299) == "dlv_2"


def test_rotation_any_signature_any_secret() -> None:
    old = signature(OLD_SECRET, "dlv_3", NOW, BODY)
    new = signature(NEW_SECRET, "dlv_3", NOW, BODY)
    headers = {"webhook-id": "dlv_3", "webhook-timestamp": str(NOW)}
    both = {**headers, "webhook-signature": f"v2,ignored {old} {new}"}
    assert verify((NEW_SECRET,), both, BODY, now=NOW) == "dlv_3"
    assert verify((OLD_SECRET,), both, BODY, now=NOW) == "dlv_3"
    only_old = {**headers, "webhook-signature": old}
    assert verify((NEW_SECRET, OLD_SECRET), only_old, BODY, now=NOW) == "dlv_3"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"webhook-signature": None}, "missing webhook-signature"),
        ({"webhook-id": None}, "missing webhook-id"),
        ({"webhook-timestamp": None}, "missing webhook-timestamp"),
        ({"webhook-timestamp": "soon"}, "not unix seconds"),
        ({"webhook-timestamp": str(NOW - 301)}, "from the receiver's clock"),
        ({"webhook-timestamp": str(NOW + 301)}, "from the receiver's clock"),
        ({"webhook-signature": "v1,!!notbase64"}, "no v1 signature"),
        ({"webhook-id": "dlv_other"}, "does not match"),
    ],
)
def test_refusals(change: dict[str, str | None], reason: str) -> None:
    headers: dict[str, str] = dict(sign(SECRET, "dlv_4", BODY, NOW))
    for key, value in change.items():
        if value is None:
            headers.pop(key)
        else:
            headers[key] = value
    with pytest.raises(SignatureError, match=reason):
        verify((SECRET,), headers, BODY, now=NOW)


def test_wrong_secret_and_changed_body() -> None:
    headers = sign(SECRET, "dlv_5", BODY, NOW)
    with pytest.raises(SignatureError, match="does not match"):
        verify((OLD_SECRET,), headers, BODY, now=NOW)
    with pytest.raises(SignatureError, match="does not match"):
        verify((SECRET,), headers, BODY + b" ", now=NOW)


def test_the_standard_library_signature_verifies_with_ours() -> None:
    """`standardwebhooks.Webhook(secret).sign`, the reference implementation, on our side."""
    sent_at = datetime.fromtimestamp(NOW, UTC)
    header = Webhook(SECRET).sign("dlv_6", sent_at, BODY.decode())
    headers = {"webhook-id": "dlv_6", "webhook-timestamp": str(NOW), "webhook-signature": header}
    assert verify((SECRET,), headers, BODY, now=NOW) == "dlv_6"
    assert signature(SECRET, "dlv_6", NOW, BODY) == header


def test_our_signatures_verify_with_the_standard_library() -> None:
    """What the simulator signs, one secret or two (a rotation), `Webhook.verify` accepts."""
    now = int(time.time())
    assert Webhook(SECRET).verify(BODY, sign(SECRET, "dlv_7", BODY, now)) == {
        "delivery_id": "dlv_1",
        "event": "project.created",
    }
    rotated = sign_all((NEW_SECRET, OLD_SECRET), "dlv_8", BODY, now)
    for secret in (NEW_SECRET, OLD_SECRET):
        Webhook(secret).verify(BODY, rotated, json_parse=False)


def test_unpadded_base64_is_the_same_key() -> None:
    unpadded = SECRET.rstrip("=")
    assert signing_key(unpadded) == signing_key(SECRET) == secret_key(unpadded)
    headers = sign(unpadded, "dlv_9", BODY, NOW)
    assert verify((SECRET,), headers, BODY, now=NOW) == "dlv_9"


@pytest.mark.parametrize(
    "secret",
    [
        "whsec_local",
        "plain-shared-secret",
        "c2lnbmluZy10ZXN0LWtleQ==",
        "whsec_",
        "whsec_====",
        "whsec_ab!d",
    ],
)
def test_secrets_not_in_the_standard_form_are_refused_without_being_quoted(secret: str) -> None:
    """A plain string is not taken as raw key bytes (docs/events.md, "Signing"): both sides
    refuse it, and neither message quotes it."""
    with pytest.raises(ValueError, match="Standard Webhooks") as receiver:
        signing_key(secret)
    with pytest.raises(ValueError, match="Standard Webhooks") as sender:
        check_secrets([secret])
    if secret != "whsec_":  # the bare prefix is named by the message itself
        assert secret not in f"{receiver.value} {sender.value}"
