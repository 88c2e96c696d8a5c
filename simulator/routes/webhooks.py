"""Handlers of /v1/webhooks: list, create, get (with a page of its delivery log), update and
delete."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..names import WEBHOOK_PATH, WEBHOOKS_PATH
from ..store.webhooks import Webhooks
from .http import (
    Endpoint,
    created,
    json_response,
    message,
    no_content,
    path_param,
    query_param,
    read_json,
)


class WebhookRoutes:
    def __init__(self, webhooks: Webhooks) -> None:
        self.webhooks = webhooks

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(WEBHOOKS_PATH, "GET", self.page),
            Endpoint(WEBHOOKS_PATH, "POST", self.create),
            Endpoint(WEBHOOK_PATH, "GET", self.get),
            Endpoint(WEBHOOK_PATH, "PATCH", self.patch),
            Endpoint(WEBHOOK_PATH, "DELETE", self.delete),
        ]

    async def page(self, r: Request) -> Response:
        return json_response(self.webhooks.page(query_param(r, "cursor")))

    async def create(self, r: Request) -> Response:
        return created(self.webhooks.create(await read_json(r)))

    async def get(self, r: Request) -> Response:
        webhook_id = path_param(r, "webhookId")
        return json_response(self.webhooks.get(webhook_id, query_param(r, "cursor")))

    async def patch(self, r: Request) -> Response:
        body = await read_json(r)
        self.webhooks.patch(path_param(r, "webhookId"), body)
        return message("Webhook updated successfully")

    async def delete(self, r: Request) -> Response:
        self.webhooks.delete(path_param(r, "webhookId"))
        return no_content()
