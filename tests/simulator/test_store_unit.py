"""Store internals that the HTTP tests cannot see: encoding size, keyset pages, cursors."""

from __future__ import annotations

import sys

import orjson
import pytest

from drone_ops_sync.simulator.store import (
    PAGE_SIZE,
    KeyIndex,
    Options,
    Store,
    decode_cursor,
    encode_row,
)
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


def test_cursor_tags_are_checked() -> None:
    store = Store(Options(seed=2, scale="tiny", members=60))
    cursor = orjson.loads(store.team.page(None, None))["cursor"]
    assert decode_cursor("team", cursor) is not None
    with pytest.raises(ApiError) as err:
        decode_cursor("projects", cursor)
    assert err.value.status == 400 and err.value.message == "Invalid cursor"
