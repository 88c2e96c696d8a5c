"""The API key on each request, and nowhere else: not in a repr, a log line or an error."""

from __future__ import annotations

from collections.abc import Generator

import httpx


class BearerAuth(httpx.Auth):
    """Adds the key to each request; its repr never shows it."""

    def __init__(self, api_key: str) -> None:
        self._header = f"Bearer {api_key}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(<redacted>)"
