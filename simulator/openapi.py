"""OpenAPI 3 document of what the simulator implements."""

from __future__ import annotations

from typing import Any


def build_document() -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Drone Operations API (simulator)", "version": "1"},
        "paths": {},
    }
