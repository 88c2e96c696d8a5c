"""The admin API: test and benchmark controls outside /v1, mounted only with --admin.

Faults (of the API and of webhook deliveries) can be switched, the API's answers held, the
webhook signing secret set or rotated, deliveries awaited and every attempt of each read back,
request counts read and reset, the workspace churned, one record edited as in the dashboard and
its rows counted; every call needs the full_access key.
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..events import parse_retry_delays
from ..names import (
    ADMIN_CHURN_PATH,
    ADMIN_COUNTS_PATH,
    ADMIN_DELIVERIES_PATH,
    ADMIN_DELIVERIES_RESET_PATH,
    ADMIN_DELIVERY_FAULTS_PATH,
    ADMIN_DELIVERY_RETRIES_PATH,
    ADMIN_EDIT_PATH,
    ADMIN_FAULTS_PATH,
    ADMIN_GATE_PATH,
    ADMIN_STATS_PATH,
    ADMIN_STATS_RESET_PATH,
    ADMIN_WAIT_PATH,
    ADMIN_WEBHOOK_SECRET_PATH,
)
from ..runtime import FULL_ACCESS, Runtime
from ..validation import ApiError
from .http import Endpoint, Handler, error, json_response, read_json


class AdminRoutes:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(ADMIN_FAULTS_PATH, "PUT", self.set_faults),
            Endpoint(ADMIN_WAIT_PATH, "POST", self.wait_deliveries),
            Endpoint(ADMIN_STATS_PATH, "GET", self.get_stats),
            Endpoint(ADMIN_STATS_RESET_PATH, "POST", self.reset_stats),
            Endpoint(ADMIN_CHURN_PATH, "POST", self.churn),
            Endpoint(ADMIN_COUNTS_PATH, "GET", self.counts),
            Endpoint(ADMIN_EDIT_PATH, "POST", self.edit),
            Endpoint(ADMIN_DELIVERY_FAULTS_PATH, "PUT", self.set_delivery_faults),
            Endpoint(ADMIN_DELIVERY_FAULTS_PATH, "GET", self.get_delivery_faults),
            Endpoint(ADMIN_DELIVERY_RETRIES_PATH, "PUT", self.set_delivery_retries),
            Endpoint(ADMIN_DELIVERY_RETRIES_PATH, "GET", self.get_delivery_retries),
            Endpoint(ADMIN_WEBHOOK_SECRET_PATH, "PUT", self.set_webhook_secret),
            Endpoint(ADMIN_DELIVERIES_PATH, "GET", self.get_deliveries),
            Endpoint(ADMIN_DELIVERIES_RESET_PATH, "POST", self.reset_deliveries),
            Endpoint(ADMIN_GATE_PATH, "PUT", self.set_gate),
            Endpoint(ADMIN_GATE_PATH, "GET", self.get_gate),
        ]

    def routes(self) -> list[BaseRoute]:
        """Every admin endpoint behind the full_access check; errors answered as the API does."""
        return [Route(e.path, self._guard(e.handler), methods=[e.method]) for e in self.endpoints()]

    def _guard(self, handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if self.rt.scope_of(request.headers.get("authorization")) != FULL_ACCESS:
                return error(401, "Admin API needs the full_access key")
            try:
                return await handler(request)
            except ApiError as exc:
                return error(exc.status, exc.message)
            except ValueError as exc:
                return error(400, str(exc))

        return endpoint

    async def set_faults(self, r: Request) -> Response:
        body = await read_json(r)
        spec = body.get("faults")
        if spec is not None and not isinstance(spec, str):
            raise ApiError(400, "faults must be a string or null")
        self.rt.faults.set(spec)
        return json_response({"faults": self.rt.faults.spec})

    async def wait_deliveries(self, r: Request) -> Response:
        body = await read_json(r)
        timeout = float(body.get("timeout", 10))
        deadline = time.monotonic() + timeout
        worker = self.rt.worker
        while worker.pending and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return json_response({"pending": worker.pending})

    async def get_stats(self, _: Request) -> Response:
        requests = dict(sorted(self.rt.stats.items()))
        return json_response({"requests": requests, "total": sum(requests.values())})

    async def reset_stats(self, _: Request) -> Response:
        self.rt.stats.clear()
        return json_response({"requests": {}, "total": 0})

    async def churn(self, r: Request) -> Response:
        body = await read_json(r)
        seed = body.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ApiError(400, "seed must be an integer")
        result = self.rt.store.churn(
            seed=seed,
            update_fraction=float(body.get("update_fraction", 0.01)),
            delete_fraction=float(body.get("delete_fraction", 0.001)),
            new_deliveries_per_webhook=int(body.get("new_deliveries_per_webhook", 0)),
        )
        return json_response(result)

    async def counts(self, _: Request) -> Response:
        return json_response(self.rt.store.counts())

    async def edit(self, r: Request) -> Response:
        """`{"list", "id"?, "set"?: {field: value}, "delete"?: bool}`: one record edited as in
        the dashboard (`store/edits.py`); answers the record as stored."""
        body = await read_json(r)
        record_id, fields = body.get("id"), body.get("set") or {}
        if record_id is not None and not isinstance(record_id, str):
            raise ApiError(400, "id must be a string")
        if not isinstance(fields, dict):
            raise ApiError(400, "set must be an object")
        record = self.rt.store.edits.edit(
            str(body.get("list")), record_id, fields, body.get("delete") is True
        )
        return json_response(record)

    async def set_delivery_faults(self, r: Request) -> Response:
        body = await read_json(r)
        spec = body.get("faults")
        if spec is not None and not isinstance(spec, str):
            raise ApiError(400, "faults must be a string or null")
        self.rt.worker.faults.set(spec)
        return await self.get_delivery_faults(r)

    async def get_delivery_faults(self, _: Request) -> Response:
        faults = self.rt.worker.faults
        return json_response({"faults": faults.spec, "active": faults.state()})

    async def set_delivery_retries(self, r: Request) -> Response:
        """`{"delays": "0.5,1,2" or null}`: the retry schedule of `--delivery-retry-delays`,
        replaced at run time (null or empty: no retries)."""
        body = await read_json(r)
        spec = body.get("delays")
        if spec is not None and not isinstance(spec, str):
            raise ApiError(400, "delays must be a string or null")
        self.rt.worker.set_retry_delays(parse_retry_delays(spec))
        return await self.get_delivery_retries(r)

    async def get_delivery_retries(self, _: Request) -> Response:
        return json_response({"delays": list(self.rt.worker.options.retry_delays)})

    async def set_webhook_secret(self, r: Request) -> Response:
        """`{"secrets": [...] or null, "webhook_id": optional}`: the default for every webhook,
        or one webhook's own (null drops its own). The answer never echoes a secret."""
        body = await read_json(r)
        webhook_id = body.get("webhook_id")
        if webhook_id is not None:
            if not isinstance(webhook_id, str):
                raise ApiError(400, "webhook_id must be a string")
            ws = self.rt.store.state
            with ws.lock:
                ws.webhook(webhook_id)
        secrets = body.get("secrets")
        if secrets is None and webhook_id is None:
            secrets = []
        count = self.rt.worker.secrets.set(secrets, webhook_id)
        return json_response({"webhook_id": webhook_id, "secrets": count})

    async def get_deliveries(self, r: Request) -> Response:
        webhook_id = r.query_params.get("webhook_id") or None
        worker = self.rt.worker
        return json_response(
            {"pending": worker.pending, "deliveries": worker.deliveries(webhook_id)}
        )

    async def reset_deliveries(self, _: Request) -> Response:
        return json_response({"forgotten": self.rt.worker.journal.clear()})

    async def set_gate(self, r: Request) -> Response:
        """`{"closed": true|false}`: hold every API request from now on, or let them all go."""
        closed = (await read_json(r)).get("closed")
        if not isinstance(closed, bool):
            raise ApiError(400, "closed must be true or false")
        gate = self.rt.gate
        if closed:
            gate.close()
        else:
            gate.closed = False
        return await self.get_gate(r)

    async def get_gate(self, _: Request) -> Response:
        return json_response({"closed": self.rt.gate.closed, "held": self.rt.gate.held})
