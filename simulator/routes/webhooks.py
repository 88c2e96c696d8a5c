"""Handlers of /v1/webhooks: list, create, get (with a page of its delivery log), update and
delete."""

from __future__ import annotations

from ..names import WEBHOOK_PATH, WEBHOOKS_PATH
from ..store.webhooks import Webhooks
from .http import Endpoint, creating, deleting, reading, said, updating

_ID = ("webhookId",)


def webhook_endpoints(webhooks: Webhooks) -> list[Endpoint]:
    return [
        Endpoint(WEBHOOKS_PATH, "GET", reading(webhooks.page, query=("cursor",))),
        Endpoint(WEBHOOKS_PATH, "POST", creating(webhooks.create)),
        Endpoint(WEBHOOK_PATH, "GET", reading(webhooks.get, _ID, ("cursor",))),
        Endpoint(
            WEBHOOK_PATH,
            "PATCH",
            updating(webhooks.patch, said("Webhook updated successfully"), _ID),
        ),
        Endpoint(WEBHOOK_PATH, "DELETE", deleting(webhooks.delete, _ID)),
    ]
