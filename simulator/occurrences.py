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
    n = job.get("recurring_interval") or 1
    days = job.get("selected_days_of_week") or [weekday_sun0(start)]
    out: set[date] = set()
    if last < start:
        return []
    if freq == "daily":
        d = start
        while d <= last:
            out.add(d)
            d += timedelta(days=n)
    elif freq == "weekly":
        week0 = start - timedelta(days=weekday_sun0(start))
        k = 0
        while week0 + timedelta(days=7 * k) <= last:
            base = week0 + timedelta(days=7 * k)
            for w in days:
                d = base + timedelta(days=w)
                if start <= d <= last:
                    out.add(d)
            k += n
    elif freq == "monthly":
        weeks = job.get("weeks_of_month")
        if not weeks and job.get("week_of_month") is not None:
            weeks = [job["week_of_month"]]
        k = 0
        while True:
            y, m = _add_months(start.year, start.month, k)
            if date(y, m, 1) > last:
                break
            if weeks:
                for q in weeks:
                    for w in days:
                        d = _nth_weekday(y, m, q, w)
                        if start <= d <= last:
                            out.add(d)
            else:
                d = date(y, m, min(start.day, calendar.monthrange(y, m)[1]))
                if start <= d <= last:
                    out.add(d)
            k += n
    elif freq == "yearly":
        k = 0
        while True:
            y = start.year + k
            if date(y, 1, 1) > last:
                break
            day = start.day
            if start.month == 2 and day == 29 and not calendar.isleap(y):
                day = 28
            d = date(y, start.month, day)
            if start <= d <= last:
                out.add(d)
            k += n
    else:
        return [start]
    return list[date | None](sorted(out))


def occurrence_count(job: Mapping[str, Any], horizon_days: int = DEFAULT_HORIZON_DAYS) -> int:
    """Number of occurrences, the unit of pilot assignment records."""
    return len(occurrence_dates(job, horizon_days))
