"""Expansion of a job's recurrence rule into occurrence dates.

Implements docs/occurrence-rules.md exactly; the dbt model `fct_job_occurrences` implements the
same rules and a test compares the two job by job, so keep both in step.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

DEFAULT_HORIZON_DAYS = 365


def weekday_sun0(d: date) -> int:
    """Weekday with 0 = Sunday ... 6 = Saturday (the API's convention)."""
    return (d.weekday() + 1) % 7


def _add_months(year: int, month: int, k: int) -> tuple[int, int]:
    total = year * 12 + (month - 1) + k
    return total // 12, total % 12 + 1


def _nth_weekday(year: int, month: int, q: int, w: int) -> date:
    """The q-th weekday `w` (Sunday = 0) of a month; q = -1 is the last one."""
    if q == -1:
        last = date(year, month, calendar.monthrange(year, month)[1])
        back = (weekday_sun0(last) - w) % 7
        return last - timedelta(days=back)
    first = date(year, month, 1)
    ahead = (w - weekday_sun0(first)) % 7
    return first + timedelta(days=ahead + 7 * (q - 1))


def _parse(value: Any) -> date | None:
    if value is None:
        return None
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def _daily(job: Mapping[str, Any], start: date, last: date, n: int) -> set[date]:
    out: set[date] = set()
    d = start
    while d <= last:
        out.add(d)
        d += timedelta(days=n)
    return out


def _days(job: Mapping[str, Any], start: date) -> list[int]:
    """The weekdays a weekly or monthly rule names; the start's weekday when none."""
    return job.get("selected_days_of_week") or [weekday_sun0(start)]


def _weekly(job: Mapping[str, Any], start: date, last: date, n: int) -> set[date]:
    days = _days(job, start)
    out: set[date] = set()
    week0 = start - timedelta(days=weekday_sun0(start))
    k = 0
    while week0 + timedelta(days=7 * k) <= last:
        base = week0 + timedelta(days=7 * k)
        for w in days:
            d = base + timedelta(days=w)
            if start <= d <= last:
                out.add(d)
        k += n
    return out


def _monthly(job: Mapping[str, Any], start: date, last: date, n: int) -> set[date]:
    """The named weeks' weekdays of every n-th month, or the start's day of the month (the
    month's last day when it is shorter)."""
    days = _days(job, start)
    weeks = job.get("weeks_of_month")
    if not weeks and job.get("week_of_month") is not None:
        weeks = [job["week_of_month"]]
    out: set[date] = set()
    k = 0
    while True:
        y, m = _add_months(start.year, start.month, k)
        if date(y, m, 1) > last:
            return out
        if weeks:
            candidates = [_nth_weekday(y, m, q, w) for q in weeks for w in days]
        else:
            candidates = [date(y, m, min(start.day, calendar.monthrange(y, m)[1]))]
        out.update(d for d in candidates if start <= d <= last)
        k += n


def _yearly(job: Mapping[str, Any], start: date, last: date, n: int) -> set[date]:
    """The start's day every n-th year; 29 February falls on the 28th in other years."""
    out: set[date] = set()
    k = 0
    while True:
        y = start.year + k
        if date(y, 1, 1) > last:
            return out
        day = start.day
        if start.month == 2 and day == 29 and not calendar.isleap(y):
            day = 28
        d = date(y, start.month, day)
        if start <= d <= last:
            out.add(d)
        k += n


_EXPANDERS = {"daily": _daily, "weekly": _weekly, "monthly": _monthly, "yearly": _yearly}


def occurrence_dates(
    job: Mapping[str, Any], horizon_days: int = DEFAULT_HORIZON_DAYS
) -> list[date | None]:
    """Sorted occurrence dates of a job; `[None]` for a flexible job (one unscheduled)."""
    start = _parse(job["start_date"])
    assert start is not None
    end = _parse(job.get("end_date"))
    last = end if end is not None else start + timedelta(days=horizon_days - 1)
    if job.get("job_pattern") != "recurring":
        return [start]
    freq = job.get("recurring_frequency")
    if freq is None:
        return [start]
    if freq == "flexible":
        return [None]
    if last < start:
        return []
    expand = _EXPANDERS.get(freq)
    if expand is None:
        return [start]
    n = job.get("recurring_interval") or 1
    return list[date | None](sorted(expand(job, start, last, n)))


def occurrence_count(job: Mapping[str, Any], horizon_days: int = DEFAULT_HORIZON_DAYS) -> int:
    """Number of occurrences, the unit of pilot assignment records."""
    return len(occurrence_dates(job, horizon_days))
