"""Schemathesis hooks: the API's cross-field rules, taken from the simulator's own rule list.

JSON Schema cannot say "end_date after start_date" or "not more than six months ago"; the
OpenAPI document states those rules in the body descriptions and the validator enforces them
(simulator/bodies.py). So that schemathesis' positive cases are positive for the API too,
`before_call` brings a schema-valid body within them (checked with the very functions the
server runs, a PATCH against the record as the server holds it, read with one GET) by the
smallest change: an optional field dropped, or a valid value for a required one. Negative
cases, and bodies of operations without cross-field rules, are sent untouched.

Loaded with `SCHEMATHESIS_HOOKS=tests.simulator.schemathesis_hooks` and told where the server
is by `SIMULATOR_BASE_URL` and `SIMULATOR_KEY` (a full_access key).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import schemathesis

from drone_ops_sync.simulator.openapi import OPERATIONS
from drone_ops_sync.simulator.rules import Body, Context
from drone_ops_sync.simulator.validation import today_utc

# the operations whose bodies have cross-field rules, as the served document lists them
BODIES: dict[tuple[str, str], Body] = {
    (op.method.upper(), op.path): op.body for op in OPERATIONS if op.body and op.body.cross
}


def _get(path: str) -> Any:
    """GET on the simulator under test; None when the record does not exist."""
    response = httpx.get(
        os.environ["SIMULATOR_BASE_URL"] + path,
        headers={"Authorization": f"Bearer {os.environ['SIMULATOR_KEY']}"},
        timeout=10,
        trust_env=False,
    )
    return response.json() if response.status_code == 200 else None


def _job_types() -> frozenset[str]:
    ids: list[str] = []
    cursor = ""
    while True:
        page = _get(f"/v1/job-types?cursor={cursor}")
        ids += [t["id"] for t in page["job_types"]]
        if page["cursor"] is None:
            return frozenset(ids)
        cursor = page["cursor"]


def _drop(*names: str) -> Callable[[dict[str, Any], Context], None]:
    def repair(body: dict[str, Any], _: Context) -> None:
        for name in names:
            body.pop(name, None)

    return repair


def _drop_end_else_start(body: dict[str, Any], _: Context) -> None:
    body.pop("end_date" if "end_date" in body else "start_date", None)


def _start_today(body: dict[str, Any], ctx: Context) -> None:
    body["start_date"] = ctx.today.isoformat()


def _drop_interval_else_frequency(body: dict[str, Any], _: Context) -> None:
    body.pop("recurring_interval" if "recurring_interval" in body else "recurring_frequency", None)


# For each cross-field rule of bodies.py, the smallest change that makes a body obey it:
# an optional field dropped, or (for a required one) a valid value. A rule added there
# without a repair here fails the run with a KeyError, on purpose.
REPAIRS: dict[str, Callable[[dict[str, Any], Context], None]] = {
    "end_after_start": _drop_end_else_start,
    "end_on_or_after_start": _drop_end_else_start,
    "other_needs_reason": _drop("status"),
    "recent_start": _start_today,
    "configured_type": _drop("type"),
    "coordinates_together": _drop("latitude", "longitude"),
    "no_interval_when_flexible": _drop_interval_else_frequency,
}


@schemathesis.hook
def before_call(
    ctx: schemathesis.HookContext, case: schemathesis.Case, kwargs: dict[str, Any]
) -> None:
    """Bring a positive case's body within the operation's cross-field rules before it is sent.

    Checked at call time, so bodies that the stateful phase merges from earlier responses
    after generation are covered, and a PATCH is judged against the record as it is now.
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    rules = BODIES.get((case.operation.method.upper(), case.operation.path))
    if rules is None or not isinstance(case.body, dict):
        return
    current = None
    if case.operation.method.upper() == "PATCH":
        params = {k: quote(str(v), safe="") for k, v in (case.path_parameters or {}).items()}
        current = _get(case.operation.path.format(**params))
        if current is None:
            return  # the PATCH answers 404 before any body rule
    context = Context(current=current, today=today_utc(), job_types=_job_types())
    for _ in rules.cross:
        broken = next((r for r in rules.cross if r.check(case.body, context) is not None), None)
        if broken is None:
            return
        REPAIRS[broken.name](case.body, context)
