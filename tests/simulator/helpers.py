"""Helpers shared by the simulator tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import httpx


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
