"""docs/occurrence-rules.md, rule by rule, on hand-checked calendars."""

from __future__ import annotations

from datetime import date
from typing import Any

from drone_ops_sync.simulator.occurrences import occurrence_dates, weekday_sun0


def job(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "job_pattern": "recurring",
        "start_date": "2025-01-01",
        "end_date": None,
    }
    base.update(kw)
    return base


def d(s: str) -> date:
    return date.fromisoformat(s)


def test_weekday_convention() -> None:
    assert weekday_sun0(d("2025-01-05")) == 0  # a Sunday
    assert weekday_sun0(d("2025-01-04")) == 6


def test_one_time_ignores_recurring_fields() -> None:
    j = job(job_pattern="one_time", recurring_frequency="daily", end_date="2025-12-31")
    assert occurrence_dates(j) == [d("2025-01-01")]


def test_recurring_without_frequency_and_flexible() -> None:
    assert occurrence_dates(job(recurring_frequency=None)) == [d("2025-01-01")]
    assert occurrence_dates(job(recurring_frequency="flexible")) == [None]


def test_daily_with_interval_and_horizon() -> None:
    got = occurrence_dates(job(recurring_frequency="daily", recurring_interval=3))
    assert got[0] == d("2025-01-01") and got[1] == d("2025-01-04")
    assert len(got) == 122  # k*3 < 365
    assert got[-1] == d("2025-12-30")  # day 363
    assert len(occurrence_dates(job(recurring_frequency="daily"), horizon_days=10)) == 10


def test_daily_end_date_inclusive() -> None:
    got = occurrence_dates(job(recurring_frequency="daily", end_date="2025-01-05"))
    assert got == [d(f"2025-01-0{i}") for i in range(1, 6)]


def test_weekly_counts_from_sunday_before_start() -> None:
    # 2025-01-01 is a Wednesday; week0 = Sunday 2024-12-29; Monday of week0 is before start
    j = job(
        recurring_frequency="weekly",
        recurring_interval=2,
        selected_days_of_week=[1, 3],
        end_date="2025-01-31",
    )
    assert occurrence_dates(j) == [
        d("2025-01-01"),
        d("2025-01-13"),
        d("2025-01-15"),
        d("2025-01-27"),
        d("2025-01-29"),
    ]


def test_weekly_default_day_is_start_weekday() -> None:
    j = job(recurring_frequency="weekly", end_date="2025-01-22")
    assert occurrence_dates(j) == [
        d("2025-01-01"),
        d("2025-01-08"),
        d("2025-01-15"),
        d("2025-01-22"),
    ]


def test_monthly_weeks_of_month_with_last_and_duplicates() -> None:
    # Fridays (5) of February 2026: 6, 13, 20, 27 -> 4th == last, counted once
    j = job(
        start_date="2026-02-01",
        end_date="2026-03-31",
        recurring_frequency="monthly",
        weeks_of_month=[4, -1],
        selected_days_of_week=[5],
    )
    assert occurrence_dates(j) == [d("2026-02-27"), d("2026-03-27")]


def test_monthly_week_of_month_default_weekday() -> None:
    # start Wednesday 2025-01-01; 2nd Wednesday of each month, every 2 months, to end of May
    j = job(
        recurring_frequency="monthly",
        recurring_interval=2,
        week_of_month=2,
        end_date="2025-05-31",
    )
    assert occurrence_dates(j) == [d("2025-01-08"), d("2025-03-12"), d("2025-05-14")]


def test_monthly_day_clamped() -> None:
    j = job(start_date="2025-01-31", end_date="2025-05-31", recurring_frequency="monthly")
    assert occurrence_dates(j) == [
        d("2025-01-31"),
        d("2025-02-28"),
        d("2025-03-31"),
        d("2025-04-30"),
        d("2025-05-31"),
    ]


def test_yearly_leap_day() -> None:
    j = job(start_date="2024-02-29", end_date="2029-01-01", recurring_frequency="yearly")
    assert occurrence_dates(j) == [
        d("2024-02-29"),
        d("2025-02-28"),
        d("2026-02-28"),
        d("2027-02-28"),
        d("2028-02-29"),
    ]


def test_window_can_be_empty() -> None:
    j = job(
        recurring_frequency="weekly",
        selected_days_of_week=[0],
        end_date="2025-01-01",
    )
    assert occurrence_dates(j) == []
