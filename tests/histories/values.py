"""Awkward values for generated histories, within what the spec allows (docs/spec/).

- text: any Unicode the JSON bodies carry except NUL (PostgreSQL text cannot hold it) and lone
  surrogates (not encodable as UTF-8), weighted towards quotes, backslashes, SQL and format
  syntax, emoji (with joiners and modifiers), bidi and zero-width marks, combining marks and
  the C0/C1 control characters;
- pairs that concatenate alike: one string split at two places, so ("a", "bc") and ("ab", "c")
  follow each other in the fields of one record (a project's name and description, a member's
  first and last name);
- timestamps at the edges: the epoch and its first second, the last millisecond before and the
  first of year 2100, daylight-saving changes in Europe and the United States (and the
  millisecond either side), the end of a day; dates on the same edges and a leap day.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import strategies as st

AWKWARD = (
    "'",
    '"',
    "\\",
    "`",
    "'; DROP TABLE projects; --",
    "%s",
    "{id}",
    "NULL",
    " ",
    ",",
    "#",
    "\t",
    "\r\n",
    "\x01",
    "\x1f",
    "\x7f",
    "\x85",
    "\u2028",
    "\u200b",
    "\u202e",
    "\ufeff",
    "e\u0301",
    "🚁",
    "👩🏽‍✈️",
    "漢字",
)
CHARACTERS = st.characters(codec="utf-8", exclude_characters="\x00", exclude_categories=["Cs"])


def text(max_size: int) -> st.SearchStrategy[str]:
    """A non-empty string of at most `max_size` characters (the spec's lengths count them)."""
    pieces = st.lists(st.sampled_from(AWKWARD) | st.text(CHARACTERS, max_size=3), min_size=1)
    joined = pieces.map("".join).filter(lambda s: 1 <= len(s) <= max_size)
    return st.text(CHARACTERS, min_size=1, max_size=max_size) | joined


@st.composite
def split_pair(draw: st.DrawFn, first_max: int, second_max: int) -> tuple[str, str]:
    """Two non-empty strings that concatenate to one drawn string: drawn twice for one record,
    they may be ("a", "bc") and then ("ab", "c")."""
    whole = draw(text(min(first_max + second_max, 60)).filter(lambda s: len(s) >= 2))
    cut = draw(st.integers(max(1, len(whole) - second_max), min(first_max, len(whole) - 1)))
    return whole[:cut], whole[cut:]


def _ms(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


_DST = (
    datetime(2026, 3, 29, 1, tzinfo=UTC),  # Europe: 02:00 CET becomes 03:00 CEST
    datetime(2026, 10, 25, 1, tzinfo=UTC),  # Europe: 03:00 CEST becomes 02:00 CET
    datetime(2026, 3, 8, 7, tzinfo=UTC),  # New York: 02:00 EST becomes 03:00 EDT
    datetime(2026, 11, 1, 6, tzinfo=UTC),  # New York: 02:00 EDT becomes 01:00 EST
)
EDGE_MS = (
    0,
    1,
    999,
    1000,
    86_399_999,
    _ms(datetime(2100, 1, 1, tzinfo=UTC)) - 1,
    _ms(datetime(2100, 1, 1, tzinfo=UTC)),
    _ms(datetime(2100, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)),
    *(_ms(moment) + delta for moment in _DST for delta in (-1, 0, 1)),
)
"""Milliseconds at the clock's edges, for a record's own `created` and `updated`."""

EDGE_DATES = (
    date(1970, 1, 1),
    date(1970, 1, 2),
    date(2026, 3, 29),
    date(2026, 10, 25),
    date(2026, 3, 8),
    date(2026, 11, 1),
    date(2028, 2, 29),
    date(2099, 12, 31),
    date(2100, 1, 1),
    date(2100, 12, 31),
)


def timestamp_ms() -> st.SearchStrategy[int]:
    return st.sampled_from(EDGE_MS)


@st.composite
def date_range(draw: st.DrawFn) -> tuple[str, str | None]:
    """A project's start date and an end date after it (or none)."""
    start = draw(st.sampled_from(EDGE_DATES[:-1]))
    later = [d for d in EDGE_DATES if d > start]
    end = draw(st.none() | st.sampled_from(later))
    return start.isoformat(), None if end is None else end.isoformat()


@st.composite
def job_start(draw: st.DrawFn) -> str:
    """A job's start date: not more than six months back (the spec's rule), or an edge ahead."""
    today = datetime.now(UTC).date()
    recent = today - timedelta(days=draw(st.integers(0, 150)))
    ahead = [d for d in EDGE_DATES if d > today]
    return draw(st.sampled_from([recent, *ahead])).isoformat()
