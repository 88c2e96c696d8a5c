"""Webhook delivery to a real receiver on 127.0.0.1, with log entries and failure_count."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import orjson
import pytest

from testkit.simulator_process import SimulatorHandle

from .helpers import walk

pytestmark = pytest.mark.e2e


class Receiver:
    """A tiny local HTTP receiver: /ok answers 200, /fail answers 500."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((self.path, orjson.loads(body), dict(self.headers)))
                status, text = (500, b"boom") if self.path == "/fail" else (200, b"thanks")
                self.send_response(status)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()
        r.thread.join(timeout=5)


def make_hook(full: httpx.Client, url: str, events: list[str]) -> str:
    r = full.post("/v1/webhooks", json={"name": "local", "url": url, "event_types": events})
    assert r.status_code == 201
    return str(r.json()["id"])


def test_events_are_delivered_and_logged(
    sim: SimulatorHandle, full: httpx.Client, receiver: Receiver
) -> None:
    ok = make_hook(full, receiver.url + "/ok", ["project.created", "project.updated"])
    bad = make_hook(full, receiver.url + "/fail", ["project.updated"])
    r = full.post(
        "/v1/projects", json={"name": "Evented", "description": "d", "start_date": "2026-05-01"}
    )
    pid = r.json()["id"]
    full.patch(f"/v1/projects/{pid}", json={"status": "in_progress"})
    full.post(f"/v1/projects/{pid}/archive", json={"archived": True})
    full.patch(f"/v1/projects/{pid}", json={"status": "in_progress"})  # no change: no event
    sim.wait_for_deliveries()

    ok_paths = [p for p, _, _ in receiver.received if p == "/ok"]
    fail_paths = [p for p, _, _ in receiver.received if p == "/fail"]
    assert len(ok_paths) == 3 and len(fail_paths) == 2
    payloads = [b for p, b, _ in receiver.received if p == "/ok"]
    assert [b["event"] for b in payloads] == [
        "project.created",
        "project.updated",
        "project.updated",
    ]
    final = full.get(f"/v1/projects/{pid}").json()
    assert payloads[-1]["data"] == final
    assert payloads[0]["data"]["status"] == "not_started"
    for b in payloads:
        assert set(b) == {"delivery_id", "event", "timestamp", "workspace_id", "data"}
        assert isinstance(b["timestamp"], int)
    assert len({b["workspace_id"] for b in payloads}) == 1

    body = full.get(f"/v1/webhooks/{ok}").json()
    hook, logs = body["webhook"], body["logs"]
    assert body["log_count"] == 3 and hook["failure_count"] == 0
    assert hook["last_triggered_at"] == logs[0]["created"]
    assert [entry["status"] for entry in logs] == ["success"] * 3
    assert logs[0]["response_status"] == 200 and logs[0]["response_body"] == "thanks"
    assert logs[0]["url"] == receiver.url + "/ok" and logs[0]["error_message"] is None
    assert orjson.loads(logs[0]["request_payload"]) == payloads[-1]
    assert [entry["event_type"] for entry in logs] == [
        "project.updated",
        "project.updated",
        "project.created",
    ]
    assert all(isinstance(entry["duration_ms"], int) for entry in logs)

    body = full.get(f"/v1/webhooks/{bad}").json()
    assert body["webhook"]["failure_count"] == 2
    assert [entry["status"] for entry in body["logs"]] == ["failed", "failed"]
    assert body["logs"][0]["response_status"] == 500 and body["logs"][0]["response_body"] == "boom"
    assert body["logs"][0]["error_message"]


def test_transport_error_is_a_failed_delivery(sim: SimulatorHandle, full: httpx.Client) -> None:
    # a closed loopback port: connection refused, response_status 0
    hook = make_hook(full, "http://127.0.0.1:9/hook", ["project.created"])
    full.post("/v1/projects", json={"name": "x", "description": "d", "start_date": "2026-05-01"})
    sim.wait_for_deliveries()
    body = full.get(f"/v1/webhooks/{hook}").json()
    assert body["webhook"]["failure_count"] == 1
    entry = body["logs"][0]
    assert entry["status"] == "failed" and entry["response_status"] == 0 and entry["error_message"]


def test_remote_receivers_are_simulated(sim: SimulatorHandle, full: httpx.Client) -> None:
    hooks = walk(full, "/v1/webhooks", "webhooks")
    generated = [h for h in hooks if h["url"].startswith("https://hooks.partner-")]
    assert generated
    before = full.get(f"/v1/webhooks/{generated[0]['id']}").json()["webhook"]
    pid = full.get("/v1/projects").json()["projects"][0]["id"]
    full.patch(f"/v1/projects/{pid}", json={"name": "Touched for the remote hook"})
    sim.wait_for_deliveries()
    after = full.get(f"/v1/webhooks/{generated[0]['id']}").json()
    assert after["logs"][0]["created"] > before["last_triggered_at"]
    assert after["logs"][0]["url"] == generated[0]["url"]
    assert orjson.loads(after["logs"][0]["request_payload"])["data"]["id"] == pid
