"""The one cursor paginator, its loop guards, and what a page must hold.

Three guards end a walk that would not: a cursor seen before, a page whose every item id this
walk has already seen (fresh cursors over the same rows), and `MAX_EMPTY_PAGES_IN_A_ROW` empty
pages with new cursors; every walk is capped at `MAX_PAGES_PER_WALK` pages. A caller may end a
walk early with `stop` (its table already failed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from .. import settings
from ..exceptions import DroneOpsError, PaginationError


class RequestCounter(Protocol):
    """Counts requests, retries and pages for whoever asked (the walk counts per table)."""

    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None: ...


class Uncounted:
    """A counter for calls nobody counts (`check`)."""

    def add(self, *, requests: int = 0, retries: int = 0, pages: int = 0) -> None:
        return None


GetPage = Callable[[str, dict[str, str]], dict[str, Any]]
"""Fetches one page: (path, query) -> the page's JSON object (the client's retried GET)."""


def walk_pages(
    get_page: GetPage,
    path: str,
    *,
    params: Mapping[str, str] | None = None,
    stats: RequestCounter | None = None,
    max_pages: int = settings.MAX_PAGES_PER_WALK,
    items_key: str | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yields each page body of a cursor-paginated list until the cursor is null, or until
    `stop()` says before a further page that the caller no longer wants it."""
    cursor: str | None = None
    seen: set[str] = set()
    seen_ids: set[str] = set()
    empty_in_a_row = 0
    for _ in range(max_pages):
        if cursor is not None and stop is not None and stop():
            return
        query = dict(params or {})
        if cursor is not None:
            query["cursor"] = cursor
        page = get_page(path, query)
        if stats is not None:
            stats.add(pages=1)
        next_cursor = page.get("cursor")
        if items_key is not None and next_cursor is not None:
            _check_page_advances(path, page, items_key, seen_ids)
            empty_in_a_row = empty_in_a_row + 1 if page.get(items_key) == [] else 0
            if empty_in_a_row >= settings.MAX_EMPTY_PAGES_IN_A_ROW:
                raise PaginationError(
                    f"GET {path} returned {empty_in_a_row} empty pages in a row, each with a new"
                    " cursor; the walk was stopped to avoid a loop"
                )
        yield page
        if next_cursor is None:
            return
        if not isinstance(next_cursor, str) or next_cursor in seen:
            raise PaginationError(
                f"GET {path} returned a cursor that does not advance ({next_cursor!r});"
                " the walk was stopped to avoid a loop"
            )
        seen.add(next_cursor)
        cursor = next_cursor
    raise PaginationError(f"GET {path} returned more than {max_pages} pages; stopped")


def _check_page_advances(
    path: str, page: dict[str, Any], items_key: str, seen_ids: set[str]
) -> None:
    """Raises when a page that promises more pages repeats only rows seen before."""
    items = page.get(items_key)
    if not isinstance(items, list) or not items:
        return
    ids = {str(item.get("id")) for item in items if isinstance(item, dict)}
    if ids and ids <= seen_ids:
        raise PaginationError(
            f"GET {path} returned a page whose {len(ids)} {items_key} were all on earlier pages"
            " of this walk, with a new cursor; the walk was stopped to avoid a loop"
        )
    seen_ids.update(ids)


def page_items(page: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    """The page's record list, each record with an id: anything else is a broken page."""
    items = page.get(key)
    if not isinstance(items, list):
        raise DroneOpsError(f"GET {path} returned a page without a {key!r} list")
    for item in items:
        if not isinstance(item, dict) or item.get("id") is None:
            raise DroneOpsError(f"GET {path} returned a {key} entry without an id")
    return items
