"""The signing scheme of docs/events.md: a known vector computed here with hmac/hashlib, the
simulator's `sign` checked by the receiver's `verify`, rotation, staleness and refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from drone_ops_sync.pipelines.listen.signing import SignatureError, verify
from drone_ops_sync.simulator.signing import sign, signature

SECRET = "whsec-test-secret"
BODY = b'{"delivery_id":"dlv_1","event":"project.created"}'
NOW = 1_700_000_000


def _reference(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    message = delivery_id.encode() + b"." + str(timestamp).encode() + b"." + body
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
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
    old = signature("old-secret-1", "dlv_3", NOW, BODY)
    new = signature("new-secret-2", "dlv_3", NOW, BODY)
    headers = {"webhook-id": "dlv_3", "webhook-timestamp": str(NOW)}
    both = {**headers, "webhook-signature": f"v2,ignored {old} {new}"}
    assert verify(("new-secret-2",), both, BODY, now=NOW) == "dlv_3"
    assert verify(("old-secret-1",), both, BODY, now=NOW) == "dlv_3"
    only_old = {**headers, "webhook-signature": old}
    assert verify(("new-secret-2", "old-secret-1"), only_old, BODY, now=NOW) == "dlv_3"


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
        verify(("another-secret",), headers, BODY, now=NOW)
    with pytest.raises(SignatureError, match="does not match"):
        verify((SECRET,), headers, BODY + b" ", now=NOW)
