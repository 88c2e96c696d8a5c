"""`drone-sync listen` over real HTTP on 127.0.0.1, as a subprocess: signed events spooled,
refusals spool nothing, duplicates dropped across a restart, unsigned mode warns, SIGTERM
stops it cleanly, and kill -9 during a burst loses no acknowledged event."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from standardwebhooks import Webhook

from .listen_process import SECRET_ENV, event, listen_command, post, running_listener
from .spool_contents import read_spool

SECRET = "whsec_bGlzdGVuLXRlc3Qta2V5LThjMWYtMDEyMzQ1Ng=="
OTHER_SECRET = "whsec_b3RoZXItc2VjcmV0LWtleS0wMTIzNDU2Nzg5YQ=="


def test_signed_events_accepted_and_refusals_spool_nothing(tmp_path: Path) -> None:
    with running_listener(tmp_path, SECRET) as listener, httpx.Client(timeout=10) as client:
        ok = post(client, listener.url, event("dlv_ok"), SECRET)
        assert ok.status_code == 202, ok.text
        assert ok.json() == {"status": "accepted", "delivery_id": "dlv_ok"}
        bad = post(client, listener.url, event("dlv_bad"), OTHER_SECRET)
        stale = post(client, listener.url, event("dlv_stale"), SECRET, int(time.time()) - 600)
        unsigned = post(client, listener.url, event("dlv_unsigned"), None)
        for response in (bad, stale, unsigned):
            assert response.status_code == 401
            assert response.text.count("\n") == 1
        assert "does not match" in bad.text
        assert "from the receiver's clock" in stale.text
        assert "missing webhook-id" in unsigned.text
        big = client.post(f"{listener.url}/events", content=b"x" * (300 * 1024))
        assert big.status_code == 413 and big.text.count("\n") == 1
        malformed = [
            client.post(f"{listener.url}/events", content=b"{not json"),
            client.post(f"{listener.url}/events", content=b"[]"),
            post(client, listener.url, event("dlv_t", timestamp="yesterday"), SECRET),
            post(
                client,
                listener.url,
                {k: v for k, v in event("dlv_n").items() if k != "data"},
                SECRET,
            ),
        ]
        assert [r.status_code for r in malformed] == [400] * 4
        assert "timestamp" in malformed[2].text and "no data" in malformed[3].text
        health = client.get(f"{listener.url}/health").json()
        assert health["events_received"] == 1 and health["signed"] is True
        assert health["spool"] == str(listener.spool_dir)
        assert listener.terminate() == 143
    contents = read_spool(listener.spool_dir)
    assert contents.delivery_ids() == ["dlv_ok"]
    assert contents.records[0]["signed"] is True
    log = listener.log()
    assert "event accepted: dlv_ok project.updated" in log
    assert "receiver stopped" in log
    assert SECRET not in log and "Survey" not in log


def test_duplicates_dropped_also_after_restart(tmp_path: Path) -> None:
    with httpx.Client(timeout=10) as client:
        with running_listener(tmp_path, SECRET, "first") as listener:
            assert post(client, listener.url, event("dlv_1"), SECRET).status_code == 202
            again = post(client, listener.url, event("dlv_1"), SECRET)
            assert again.status_code == 200 and again.json()["status"] == "duplicate"
        with running_listener(tmp_path, SECRET, "second") as listener:
            after = post(client, listener.url, event("dlv_1"), SECRET)
            assert after.status_code == 200 and after.json()["status"] == "duplicate"
            assert post(client, listener.url, event("dlv_2"), SECRET).status_code == 202
            health = client.get(f"{listener.url}/health").json()
            assert health["duplicates"] == 1 and health["events_in_spool"] == 2
    assert read_spool(listener.spool_dir).delivery_ids() == ["dlv_1", "dlv_2"]


def test_unsigned_mode_warns_loudly(tmp_path: Path) -> None:
    with running_listener(tmp_path, None) as listener, httpx.Client(timeout=10) as client:
        assert post(client, listener.url, event("dlv_u"), None).status_code == 202
        assert client.get(f"{listener.url}/health").json()["signed"] is False
        listener.terminate()
    log = listener.log()
    assert "WARNING" in log and "UNSIGNED MODE" in log
    assert "event accepted UNSIGNED: dlv_u" in log
    assert read_spool(listener.spool_dir).records[0]["signed"] is False


BURST = 200
THREADS = 8
KILL_AFTER_ACKS = 60


def test_kill_9_during_a_burst_loses_no_acknowledged_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def send(ids: list[str], url: str) -> None:
        with httpx.Client(timeout=5) as client:
            for delivery_id in ids:
                try:
                    response = post(client, url, event(delivery_id), SECRET)
                except httpx.HTTPError:
                    continue
                if response.status_code in (200, 202):
                    with lock:
                        acknowledged.append(delivery_id)
                        if len(acknowledged) >= KILL_AFTER_ACKS:
                            enough.set()

    ids = [f"dlv_burst_{i:03d}" for i in range(BURST)]
    with running_listener(tmp_path, SECRET) as listener:
        threads = [
            threading.Thread(target=send, args=(ids[n::THREADS], listener.url))
            for n in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        assert enough.wait(timeout=60)
        listener.kill()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    with lock:
        acked = list(acknowledged)
    contents = read_spool(listener.spool_dir)
    spooled = contents.delivery_ids()
    assert len(spooled) == len(set(spooled))
    assert set(acked) <= set(spooled)
    assert len(acked) < BURST, "the kill came after the burst ended"
    with capsys.disabled():
        print(
            f"\nkill -9 burst: attempted {BURST}, acknowledged {len(acked)}, in spool"
            f" {len(spooled)} (unreadable lines {contents.skipped})"
        )
    with running_listener(tmp_path, SECRET, "restart") as listener, httpx.Client() as client:
        health = client.get(f"{listener.url}/health").json()
        assert health["events_in_spool"] == len(spooled)
        again = post(client, listener.url, event(acked[0]), SECRET)
        assert again.json()["status"] == "duplicate"


def _listen_once(tmp_path: Path, secret: str) -> subprocess.CompletedProcess[str]:
    """`listen` on the test's spool, expected to stop at once; its output as one text."""
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}
    return subprocess.run(
        listen_command(tmp_path / "spool"),
        env={**env, SECRET_ENV: secret},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_configuration_error_and_busy_spool_exit_codes(tmp_path: Path) -> None:
    empty = _listen_once(tmp_path, "  ")
    assert empty.returncode == 2
    assert "webhook_secret: is empty" in empty.stderr + empty.stdout
    with running_listener(tmp_path, SECRET):
        busy = _listen_once(tmp_path, SECRET)
    assert busy.returncode == 75
    assert "held by another receiver" in busy.stderr + busy.stdout
    assert SECRET not in busy.stderr + busy.stdout


@pytest.mark.parametrize("secret", ["whsec_local", "listen-test-secret-8c1f"])
def test_a_secret_not_in_the_standard_form_stops_the_start(tmp_path: Path, secret: str) -> None:
    """A plain string or `whsec_` without base64 after it: exit 2, one line naming the setting,
    the value not shown (docs/events.md, "Signing")."""
    refused = _listen_once(tmp_path, secret)
    output = refused.stderr + refused.stdout
    assert refused.returncode == 2, output
    assert "sources.drone_ops.webhook_secret: is not a Standard Webhooks secret" in output
    assert secret not in output
    assert not (tmp_path / "spool" / "events.jsonl").exists()


def test_deliveries_signed_by_the_standard_library_are_accepted(tmp_path: Path) -> None:
    """`standardwebhooks.Webhook(secret).sign`, the reference implementation, over real HTTP."""
    webhook = Webhook(SECRET)
    with running_listener(tmp_path, SECRET) as listener, httpx.Client(timeout=10) as client:
        answers = {}
        for delivery_id in ("dlv_std_1", "dlv_std_2"):
            body = json.dumps(event(delivery_id))
            sent_at = datetime.now(UTC)
            headers = {
                "content-type": "application/json",
                "webhook-id": delivery_id,
                "webhook-timestamp": str(int(sent_at.timestamp())),
                "webhook-signature": webhook.sign(delivery_id, sent_at, body),
            }
            answers[delivery_id] = client.post(
                f"{listener.url}/events", content=body, headers=headers
            )
        forged = Webhook(OTHER_SECRET)
        body = json.dumps(event("dlv_std_forged"))
        sent_at = datetime.now(UTC)
        refused = client.post(
            f"{listener.url}/events",
            content=body,
            headers={
                "content-type": "application/json",
                "webhook-id": "dlv_std_forged",
                "webhook-timestamp": str(int(sent_at.timestamp())),
                "webhook-signature": forged.sign("dlv_std_forged", sent_at, body),
            },
        )
    assert {k: (r.status_code, r.json()) for k, r in answers.items()} == {
        k: (202, {"status": "accepted", "delivery_id": k}) for k in answers
    }
    assert refused.status_code == 401
    assert read_spool(listener.spool_dir).delivery_ids() == ["dlv_std_1", "dlv_std_2"]
