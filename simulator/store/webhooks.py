"""Webhooks: the list, one webhook with a page of its delivery log (newest first), and changes.

Deleting a webhook drops its delivery log with it; what gets delivered and logged is
`delivery_log.py`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..deliveries import LazyLog
from ..names import LOGS, WEBHOOKS
from ..validation import validate_webhook
from .keyset import decode_cursor, list_body
from .state import Workspace, now_ms


class Webhooks:
    """The webhook operations of the API, over the shared workspace."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def _generated_log(self, log_id: str, key: LazyLog) -> dict[str, Any]:
        """A delivery-log entry that came with the workspace, generated from its key."""
        return self.ws.gen.log(key, log_id, self.ws.webhook_by_index[key.webhook_index])

    def get(self, webhook_id: str, cursor: str | None) -> bytes:
        after = decode_cursor(LOGS, cursor)
        ws = self.ws
        with ws.lock:
            wh = ws.webhook(webhook_id)
            rows, last = ws.logs[webhook_id].page(after, self._generated_log)
            # built on every read, never cached: a first sync reads each entry once and later
            # ones only the newest page, so a cache would hold the whole log for one read
            encs = [orjson.dumps(row) for row in rows]
            head = b'"webhook":' + orjson.dumps(wh) + b","
        return list_body(LOGS, encs, last, head=head, count="log_count")

    def page(self, cursor: str | None) -> bytes:
        return self.ws.plain_page(WEBHOOKS, self.ws.webhook_index, self.ws.webhooks, cursor)

    def create(self, body: dict[str, Any]) -> str:
        fields = validate_webhook(body, creating=True)
        ws = self.ws
        with ws.lock:
            t = ws.now()
            wid = ws.new_id("wh_")
            ws.add_webhook_row(
                {
                    "id": wid,
                    "name": fields["name"],
                    "url": fields["url"],
                    "event_types": fields["event_types"],
                    "status": fields["status"],
                    "failure_count": 0,
                    "created": t,
                    "updated": t,
                    "created_by": dict(ws.key_owner),
                    "last_triggered_at": None,
                }
            )
            ws.webhook_index.add((t, wid))
            return wid

    def patch(self, webhook_id: str, body: dict[str, Any]) -> None:
        with self.ws.lock:
            wh = self.ws.webhook(webhook_id)
            fields = validate_webhook(body, creating=False)
            changed = {k: v for k, v in fields.items() if wh.get(k) != v}
            if changed:
                wh.update(changed)
                wh["updated"] = max(now_ms(), wh["updated"] + 1)

    def delete(self, webhook_id: str) -> None:
        ws = self.ws
        with ws.lock:
            wh = ws.webhook(webhook_id)
            ws.webhook_index.remove((wh["created"], webhook_id))
            del ws.webhooks[webhook_id]
            ws.logs.pop(webhook_id, None)
