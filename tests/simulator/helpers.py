"""Helpers shared by the simulator tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl

import httpx

from drone_ops_sync.simulator.server import InProcessHandle
from testkit.simulator_process import DELIVERIES_SETTLE_S, SimulatorHandle


def walk(client: httpx.Client, path: str, key: str, max_pages: int = 1000) -> list[dict[str, Any]]:
    """Every row of a cursor-paginated list (bounded page count)."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    base, _, query = path.partition("?")
    fixed = dict(parse_qsl(query))
    for _ in range(max_pages):
        params = {**fixed, "cursor": cursor} if cursor else fixed
        r = client.get(base, params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        rows.extend(body[key])
        cursor = body["cursor"]
        if cursor is None:
            return rows
    raise AssertionError("pagination did not finish")


@contextlib.contextmanager
def webhook_to(
    sim: SimulatorHandle | InProcessHandle,
    api: httpx.Client,
    url: str,
    events: Sequence[str] = ("project.updated",),
) -> Iterator[str]:
    """A webhook to `url`, deleted on exit with the delivery faults cleared, so no later test's
    events go to a receiver that is gone (a deleted webhook's retries stop)."""
    r = api.post("/v1/webhooks", json={"name": "test", "url": url, "event_types": list(events)})
    assert r.status_code == 201, r.text
    hook_id = str(r.json()["id"])
    try:
        yield hook_id
    finally:
        sim.set_delivery_faults(None)
        api.delete(f"/v1/webhooks/{hook_id}")
        sim.wait_for_deliveries(timeout=DELIVERIES_SETTLE_S)


def new_project(api: httpx.Client, start_date: str = "2026-06-01") -> str:
    """A project of the test's own (its `project.created` goes to no `project.updated` hook)."""
    body = {"name": "New", "description": "d", "start_date": start_date}
    r = api.post("/v1/projects", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def rename(api: httpx.Client, project_id: str, name: str) -> None:
    """A PATCH that changes the project, so it emits `project.updated`."""
    assert api.patch(f"/v1/projects/{project_id}", json={"name": name}).status_code == 200
