"""A project's history: its versions, from creation through `updates` changes.

`expand` turns a plan (timeline.py) into versions: the status milestones, then optional edits
chosen to spend the project's share of updates (planning steps, pauses and resumptions,
end-date reschedules before work starts, LAANC numbers, a CRM id, a rename, description
revisions). Edits fall where they are valid: pauses only while work is in progress,
reschedules only before it starts, nothing after a project closes or is archived.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from .catalog import SITE_KINDS
from .seeded import row_rng
from .timeline import (
    ARCHIVED,
    DESCRIPTION,
    END,
    EXTERNAL,
    LAANC,
    NAME,
    PAUSES,
    PRE_START,
    REASON,
    STATUS,
    UPDATED,
    ProjectPlan,
    Version,
)

# optional edits, and how often each is picked when a project has updates to spend
EDIT_WEIGHTS = {
    "plan": 3,  # a step along draft -> not_started -> planned
    "reschedule": 2,  # the end date moves later, before work starts
    "rename": 1,  # the year is added to the name
    "external": 2,  # the CRM id is set
    "laanc": 2,  # the LAANC number is set, then renewed
    "detour": 3,  # a pause and the resumption (two updates)
    "describe": 2,  # a description revision
}


Change = tuple[int, int, tuple[tuple[int, Any], ...]]  # (time, order at that time, fields)


def _add(changes: list[Change], t: int, order: int, *fields: tuple[int, Any]) -> None:
    changes.append((t, order, fields))


def expand(plan: ProjectPlan, updates: int, seed: int) -> list[Version]:
    """The project's versions: creation, then `updates` (at least `min_updates`) changes.

    Status changes are drawn first, then the field edits, from one seeded stream."""
    rng = row_rng(seed, "history", plan.index)
    first_move = min(t for t in (plan.t_start, plan.t_term, plan.until) if t is not None)
    end_span = (plan.end - plan.start).days if plan.end is not None else 0
    spent = _spend(plan, updates - plan.min_updates, rng, first_move, end_span)
    changes: list[Change] = []
    status0 = _status_changes(plan, spent, rng, first_move, changes)
    name0, desc0, external0, laanc0, end0 = _field_edits(
        plan, spent, rng, first_move, end_span, changes
    )
    changes.sort(key=lambda c: (c[0], c[1]))
    times = spaced([c[0] for c in changes], plan.created, plan.until)
    state: list[Any] = [
        plan.created,
        name0,
        desc0,
        status0,
        plan.start.isoformat(),
        end0.isoformat() if end0 is not None else None,
        False,
        external0,
        laanc0,
        None,
    ]
    versions: list[Version] = [tuple(state)]
    for t, (_, _, fields) in zip(times, changes, strict=True):
        state[UPDATED] = t
        for field, value in fields:
            state[field] = value
        versions.append(tuple(state))
    return versions


def _status_changes(
    plan: ProjectPlan,
    spent: dict[str, int],
    rng: random.Random,
    first_move: int,
    changes: list[Change],
) -> str:
    """Planning steps, the start, pauses and resumptions, the end and archiving; returns the
    status the project was created with."""
    chain_top = PRE_START.index(plan.pre_status) if plan.pre_status else 0
    started = plan.t_start if plan.t_start is not None else plan.created
    work_to = plan.t_term if plan.t_term is not None else plan.until
    steps = spent["plan"]
    status0 = plan.pre_status or "in_progress"
    if plan.pre_status:
        status0 = PRE_START[chain_top - steps]
        for j, t in enumerate(sorted(draws(rng, plan.created + 1, first_move, steps))):
            _add(changes, t, 0, (STATUS, PRE_START[chain_top - steps + j + 1]))
    if plan.t_start is not None:
        _add(changes, plan.t_start, 1, (STATUS, "in_progress"))
    pauses = draws(rng, started + 1, work_to, 2 * spent["detour"])
    for j, t in enumerate(sorted(pauses)):
        status = PAUSES[rng.randrange(len(PAUSES))] if j % 2 == 0 else "in_progress"
        _add(changes, t, 2, (STATUS, status))
    if plan.t_term is not None:
        _add(changes, plan.t_term, 3, (STATUS, plan.status), (REASON, plan.other_status_reason))
    if plan.t_archive is not None:
        _add(changes, plan.t_archive, 4, (ARCHIVED, True))
    return status0


def _field_edits(
    plan: ProjectPlan,
    spent: dict[str, int],
    rng: random.Random,
    first_move: int,
    end_span: int,
    changes: list[Change],
) -> tuple[str, str, str | None, str | None, date | None]:
    """A rename, description revisions, the CRM id, LAANC numbers and end-date reschedules;
    returns the name, description, CRM id, LAANC number and end date the project started with."""
    edit_end = plan.edit_end
    name0 = plan.draft_name if spent["rename"] else plan.name
    for t in draws(rng, plan.created + 1, edit_end, spent["rename"]):
        _add(changes, t, 5, (NAME, plan.name))
    revisions = spent["describe"]
    variants = description_drafts(plan)
    desc0 = variants[0] if revisions else plan.description
    for j, t in enumerate(sorted(draws(rng, plan.created + 1, edit_end, revisions))):
        text = plan.description if j == revisions - 1 else variants[(j + 1) % len(variants)]
        _add(changes, t, 5, (DESCRIPTION, text))
    external0 = None if spent["external"] else plan.external_id
    for t in draws(rng, plan.created + 1, edit_end, spent["external"]):
        _add(changes, t, 5, (EXTERNAL, plan.external_id))
    laanc_edits = spent["laanc"]
    laanc0 = None if laanc_edits else plan.laanc_number
    renewals = [f"LAANC-{rng.randrange(10**7):07d}" for _ in range(laanc_edits - 1)]
    for j, t in enumerate(sorted(draws(rng, plan.created + 1, edit_end, laanc_edits))):
        _add(changes, t, 5, (LAANC, renewals[j] if j < len(renewals) else plan.laanc_number))
    moves = spent["reschedule"]
    end0 = plan.end
    if moves and plan.end is not None:
        step = max(1, (end_span - 1) // (moves + 1))
        end0 = plan.end - timedelta(days=moves * step)
        for j, t in enumerate(sorted(draws(rng, plan.created + 1, first_move, moves))):
            moved = plan.end - timedelta(days=(moves - j - 1) * step)
            _add(changes, t, 5, (END, moved.isoformat()))
    return name0, desc0, external0, laanc0, end0


def _spend(
    plan: ProjectPlan, extra: int, rng: random.Random, first_move: int, end_span: int
) -> dict[str, int]:
    """How many of each optional edit a project gets for `extra` updates.

    Only edits the project's timeline has room for are picked: planning steps and reschedules
    need a planning window, pauses a period of work; revisions always fit.
    """
    planning = first_move - plan.created if plan.pre_status else 0
    started = plan.t_start if plan.t_start is not None else plan.created
    working = plan.pre_status is None or plan.t_start is not None
    work_to = plan.t_term if plan.t_term is not None else plan.until
    unbounded = 1 << 30
    caps = {
        "plan": PRE_START.index(plan.pre_status) if plan.pre_status and planning > 10 else 0,
        "reschedule": 2 if planning > 10 and end_span >= 3 else 0,
        "rename": 1,
        "external": 1 if plan.external_id else 0,
        "laanc": 3 if plan.laanc_number else 0,
        "detour": unbounded if working and work_to - started > 1000 else 0,
        "describe": unbounded,
    }
    spent = dict.fromkeys(caps, 0)
    left = max(extra, 0)
    while left > 0:
        kinds = [k for k in caps if spent[k] < caps[k] and (k != "detour" or left >= 2)]
        pick = rng.randrange(sum(EDIT_WEIGHTS[k] for k in kinds))
        for kind in kinds:
            pick -= EDIT_WEIGHTS[kind]
            if pick < 0:
                break
        spent[kind] += 1
        left -= 2 if kind == "detour" else 1
    return spent


def draws(rng: random.Random, lo: int, hi: int, k: int) -> list[int]:
    """`k` distinct instants in [lo, hi); past `hi` only if the window holds fewer than `k`."""
    if k <= 0:
        return []
    return rng.sample(range(lo, max(hi, lo + k)), k)


def spaced(times: list[int], after: int, before: int) -> list[int]:
    """Sorted times made strictly increasing, each after `after` and, if room, before `before`.

    Ties (two edits drawn at the same millisecond) move the later one on by a millisecond, so
    every version has its own `updated`.
    """
    out: list[int] = []
    prev = after
    for t in times:
        prev = max(t, prev + 1)
        out.append(prev)
    nxt = before
    for j in range(len(out) - 1, -1, -1):
        if out[j] >= nxt and nxt - 1 > after:
            out[j] = nxt - 1
        nxt = out[j]
    return out


def description_drafts(plan: ProjectPlan) -> tuple[str, ...]:
    """Earlier wordings of a project's description, used before its final one."""
    label = SITE_KINDS[plan.kind].label
    head = f"{label} inspection programme for {plan.site}."
    return (
        f"{head} Scope to be confirmed with the asset owner.",
        f"{head} Deliverables: annotated imagery and a defect register.",
        f"{head} Deliverables under review with the asset owner.",
    )
