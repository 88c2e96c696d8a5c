"""Keyset pages and their bytes: what every list of the store shares.

A list is a sorted index of (created, id) keys; a page is up to PAGE_SIZE ids after a cursor's
key, and its body is assembled from rows encoded once with orjson and cached until the row
changes, which keeps the hot list path cheap.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..bodies import CURSOR_KINDS, cursor_field
from ..validation import check_query

PAGE_SIZE = 50
_ENC_CACHE_MAX = 100_000
Key = tuple[int, str]


def encode_row(row: Any) -> bytes:
    """orjson output copied to an exact-size object.

    orjson returns bytes that keep its growth buffer (about 8 KiB for a 1 KiB row); cached rows
    would otherwise cost eight times their size.
    """
    return memoryview(orjson.dumps(row)).tobytes()


def cached(cache: dict[str, bytes], key: str, build: Callable[[], Any]) -> bytes:
    """The cached encoding of a row, built (and the cache bounded) on a miss."""
    enc = cache.get(key)
    if enc is None:
        if len(cache) >= _ENC_CACHE_MAX:
            cache.clear()
        enc = cache[key] = encode_row(build())
    return enc


def encode_cursor(tag: str, key: Key) -> str:
    """`<list>.<created>.<id>` of the last row served: opaque to clients, and a regular
    language, so the OpenAPI document can state exactly which cursors a list accepts."""
    return f"{tag}.{key[0]}.{key[1]}"


_CURSOR_RULES = {kind: cursor_field(kind) for kind in CURSOR_KINDS}


def decode_cursor(tag: str, cursor: str | None) -> Key | None:
    """The (created, id) key a cursor points after; 400 `Invalid cursor` when it is not one
    of this list's cursors. An empty cursor is the first page."""
    value = check_query(cursor, _CURSOR_RULES[tag])
    if value is None:
        return None
    _, created, row_id = value.split(".", 2)
    return (int(created), row_id)


def cursor_json(tag: str, last: Key | None) -> bytes:
    """The `cursor` value of a page as JSON: the next page's cursor, or null on the last."""
    return b"null" if last is None else b'"' + encode_cursor(tag, last).encode() + b'"'


def list_body(
    name: str, encs: list[bytes], last: Key | None, *, head: bytes = b"", count: str = "count"
) -> bytes:
    """`{<head>"<name>": [rows], "<count>": n, "cursor": ...}`, the shape of every page: a
    list's (no head) and a webhook's delivery log (the webhook itself as the head)."""
    return b"".join(
        (
            b"{",
            head,
            b'"',
            name.encode(),
            b'":[',
            b",".join(encs),
            b'],"',
            count.encode(),
            b'":',
            str(len(encs)).encode(),
            b',"cursor":',
            cursor_json(name, last),
            b"}",
        )
    )


class KeyIndex:
    """Sorted (created, id) keys: the keyset that every list paginates over."""

    __slots__ = ("keys",)

    def __init__(self, keys: Iterable[Key] = ()) -> None:
        self.keys: list[Key] = sorted(keys)

    def add(self, key: Key) -> None:
        if not self.keys or key > self.keys[-1]:
            self.keys.append(key)
        else:
            insort(self.keys, key)

    def remove(self, key: Key) -> None:
        i = bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            del self.keys[i]

    def page(
        self,
        after: Key | None,
        keep: Callable[[str], bool] | None = None,
        reverse: bool = False,
    ) -> tuple[list[str], Key | None]:
        """Up to PAGE_SIZE ids after `after` and the cursor key, None when nothing follows."""
        keys = self.keys
        out: list[str] = []
        last: Key | None = None
        if reverse:
            i = (len(keys) if after is None else bisect_left(keys, after)) - 1
            step = -1
            stop = -1
        else:
            i = 0 if after is None else bisect_right(keys, after)
            step = 1
            stop = len(keys)
        while i != stop:
            k = keys[i]
            if keep is None or keep(k[1]):
                if len(out) == PAGE_SIZE:
                    return out, last
                out.append(k[1])
                last = k
            i += step
        return out, None
