"""What a project event leaves in the workspace: its payload, and an entry in the delivery log
of each webhook it was sent to, with that webhook's counters updated.

The delivery worker (`simulator/events.py`) and admin churn both record through here, so a
delivery looks the same however it came about.
"""

from __future__ import annotations

from typing import Any

import orjson

from .state import Workspace, now_ms


class DeliveryLog:
    """Event payloads and delivery-log entries, over the shared workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def subscribers(self, event: str) -> list[dict[str, Any]]:
        """Active webhooks subscribed to an event kind (copies, for the delivery worker)."""
        with self.ws.lock:
            return [
                dict(w)
                for w in self.ws.webhooks.values()
                if w["status"] == "active" and event in w["event_types"]
            ]

    def record(
        self,
        webhook_id: str,
        *,
        event: str,
        url: str,
        payload: str,
        response_status: int,
        response_body: str,
        duration_ms: int,
        error: str | None,
        created: int | None = None,
    ) -> str | None:
        """Append a delivery-log entry and update the webhook's counters."""
        ws = self.ws
        with ws.lock:
            wh = ws.webhooks.get(webhook_id)
            if wh is None:
                return None
            ok = error is None and 200 <= response_status < 300
            t = ws.now() if created is None else created
            lid = ws.new_id("whl_")
            ws.logs[webhook_id].record(
                {
                    "id": lid,
                    "event_type": event,
                    "url": url,
                    "status": "success" if ok else "failed",
                    "response_status": response_status,
                    "response_body": response_body,
                    "request_payload": payload,
                    "duration_ms": duration_ms,
                    "error_message": error,
                    "created": t,
                }
            )
            if not ok:
                wh["failure_count"] += 1
            wh["last_triggered_at"] = t
            wh["updated"] = max(t, wh["updated"] + 1)
            return lid

    def event_payload(self, event: str, project: dict[str, Any]) -> str:
        """The JSON body a webhook receives for one project event."""
        return self.new_delivery(event, project)[1]

    def new_delivery(self, event: str, project: dict[str, Any]) -> tuple[str, str]:
        """A fresh `delivery_id` and the JSON body carrying it: the sender keeps the id apart
        to sign with it and to report attempts by it, without parsing its own body back."""
        delivery_id = self.ws.new_id("dlv_")
        body = orjson.dumps(
            {
                "delivery_id": delivery_id,
                "event": event,
                "timestamp": now_ms(),
                "workspace_id": self.ws.workspace_id,
                "data": project,
            }
        ).decode()
        return delivery_id, body
