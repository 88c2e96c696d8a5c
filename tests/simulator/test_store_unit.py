"""Store internals that the HTTP tests cannot see: encoding size, keyset pages, cursors."""

from __future__ import annotations

import random
import sys
from typing import Any

import orjson
import pytest

from drone_ops_sync.simulator.deliveries import LazyLog
from drone_ops_sync.simulator.store import (
    PAGE_SIZE,
    KeyIndex,
    Options,
    Store,
    decode_cursor,
    encode_row,
)
from drone_ops_sync.simulator.store.webhook_log import WebhookLog
from drone_ops_sync.simulator.validation import ApiError


def test_cached_encodings_are_exact_size() -> None:
    row = {"description": "x" * 1000, "n": list(range(50))}
    enc = encode_row(row)
    assert orjson.loads(enc) == row
    assert sys.getsizeof(enc) - len(enc) < 64  # no orjson growth buffer kept


def test_cache_footprint_stays_near_content_size() -> None:
    store = Store(Options(seed=2, scale="small"))
    for pid in list(store.state.projects):
        store.jobs.page(pid, None)
    sizes = [sys.getsizeof(b) for b in store.state.job_enc.values()]
    content = [len(b) for b in store.state.job_enc.values()]
    assert sum(sizes) < 1.2 * sum(content)


def test_keyindex_pages_forward_and_reverse() -> None:
    keys = [(t, f"id{t:03d}") for t in range(120)]
    index = KeyIndex(reversed(keys))
    ids, last = index.page(None)
    assert ids == [k[1] for k in keys[:PAGE_SIZE]] and last == keys[PAGE_SIZE - 1]
    ids, last = index.page(keys[99])
    assert ids == [k[1] for k in keys[100:]] and last is None
    ids, last = index.page(None, reverse=True)
    assert ids[0] == "id119" and last == keys[70]
    ids, last = index.page(keys[70], reverse=True)
    assert ids[0] == "id069" and ids[-1] == "id020" and last == keys[20]
    # a cursor whose row was deleted still positions correctly
    index.remove(keys[20])
    ids, last = index.page(keys[20], reverse=True)
    assert ids == [k[1] for k in reversed(keys[:20])] and last is None
    # exactly a full page leaves no cursor
    ids, last = KeyIndex(keys[:PAGE_SIZE]).page(None)
    assert len(ids) == PAGE_SIZE and last is None


def _log_pages(log: WebhookLog) -> list[tuple[list[str], Any]]:
    pages, after = [], None
    while True:
        rows, after = log.page(after, lambda log_id, key: {"id": log_id, "created": key.created})
        pages.append(([row["id"] for row in rows], after))
        if after is None:
            return pages


def test_webhook_log_pages_as_a_key_index_over_generated_and_recorded_entries() -> None:
    """Generated entries kept as columns page exactly as their keys would in a `KeyIndex`,
    newest first, with recorded entries merged in between them and ties on `created` ordered
    by id (generated times are clamped to the anchor, so several can share one)."""
    rng = random.Random(3)
    generated = [
        (f"whl_{rng.getrandbits(64):016x}", LazyLog(e, 0, min(1000 + 7 * e, 1500), False))
        for e in range(130)
    ]
    rng.shuffle(generated)
    log = WebhookLog(0, generated)
    index = KeyIndex((key.created, log_id) for log_id, key in generated)
    for created in (999, 1203, 1500, 1500, 1600, 1203):
        log_id = f"whl_{rng.getrandbits(64):016x}"
        log.record({"id": log_id, "created": created})
        index.add((created, log_id))
    expected, after = [], None
    while True:
        ids, after = index.page(after, reverse=True)
        expected.append((ids, after))
        if after is None:
            break
    assert len(expected) == 3 and len(log) == 136
    assert _log_pages(log) == expected
    with pytest.raises(ValueError, match="generated delivery-log id"):
        WebhookLog(0, [("whl_ABC", LazyLog(0, 0, 1, False))])


def test_cursor_tags_are_checked() -> None:
    store = Store(Options(seed=2, scale="tiny", members=60))
    cursor = orjson.loads(store.team.page(None, None))["cursor"]
    assert decode_cursor("team", cursor) is not None
    with pytest.raises(ApiError) as err:
        decode_cursor("projects", cursor)
    assert err.value.status == 400 and err.value.message == "Invalid cursor"
