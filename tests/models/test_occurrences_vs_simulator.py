"""fct_job_occurrences against the simulator's own expansion, job by job, on random rules.

Both implement docs/occurrence-rules.md; random rules (seeded) reach edges the hand-made cases
may miss: month ends, leap years, intervals, long end dates, weeks [4, -1], empty arrays.
"""

from __future__ import annotations

import json
import pathlib
import random
from datetime import date, timedelta
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from drone_ops_sync.pipelines.publish.dbt_build import build_models
from drone_ops_sync.simulator.occurrences import occurrence_dates
from tests.models.raw_fixture import T1, _job, _version, create_raw_warehouse

JOB_COUNT = 3000


def random_job(rng: random.Random, index: int) -> dict[str, Any]:
    """A job with a random, valid recurrence rule (plus a few one_time and null cases)."""
    start = date(2023, 1, 1) + timedelta(days=rng.randrange(0, 3 * 366))
    if rng.random() < 0.08:
        start = rng.choice([date(2024, 2, 29), date(2024, 1, 31), date(2023, 8, 31)])
    frequency = rng.choice(["daily", "weekly", "monthly", "monthly", "yearly", "flexible", None])
    end = None if rng.random() < 0.4 else start + timedelta(days=rng.randrange(0, 1500))
    fields: dict[str, Any] = {
        "job_pattern": "one_time" if rng.random() < 0.1 else "recurring",
        "recurring_frequency": frequency,
        "recurring_interval": rng.choice([None, 1, 1, 2, 3, 5]),
        "end_date": end,
    }
    if rng.random() < 0.6:
        fields["selected_days_of_week"] = sorted(rng.sample(range(7), rng.randrange(0, 4)))
    if frequency == "monthly" and rng.random() < 0.6:
        if rng.random() < 0.5:
            fields["weeks_of_month"] = rng.sample([1, 2, 3, 4, -1], rng.randrange(1, 4))
        else:
            fields["week_of_month"] = rng.choice([1, 2, 3, 4, -1])
    return _job(f"r{index}", "p1", "planned", start, **fields)


@pytest.mark.slow
def test_calendar_matches_simulator_job_by_job(tmp_path: pathlib.Path) -> None:
    rng = random.Random(20240229)
    jobs = [random_job(rng, index) for index in range(JOB_COUNT)]
    database = create_raw_warehouse(tmp_path / "random.duckdb")
    with duckdb.connect(str(database)) as con:
        con.execute('delete from "random"."drone_ops"."jobs"')
        versions = pa.Table.from_pylist([_version(job, T1, None) for job in jobs])
        con.register("versions", versions)
        con.execute('insert into "random"."drone_ops"."jobs" by name select * from versions')
    result = build_models(
        database, run_tests=False, target_path=tmp_path / "target", select="+fct_job_occurrences"
    )
    assert result.ok, result.failures

    with duckdb.connect(str(database), read_only=True) as con:
        calendar_rows = con.execute(
            "select job_id, occurrence_date from drone_ops_marts.fct_job_occurrences"
            " order by job_id, occurrence_number"
        ).fetchall()
    got: dict[str, list[date | None]] = {}
    for job_id, occurrence_date in calendar_rows:
        got.setdefault(job_id, []).append(occurrence_date)

    mismatches = []
    for job in jobs:
        simulator_job = {
            **job,
            **{
                key: json.loads(job[key]) if job[key] is not None else None
                for key in ("selected_days_of_week", "weeks_of_month")
            },
        }
        expected = occurrence_dates(simulator_job)
        if got.get(job["id"], []) != expected:
            mismatches.append((job, expected[:5], got.get(job["id"], [])[:5]))
    assert not mismatches, f"{len(mismatches)} jobs differ, first: {mismatches[0]}"
    assert sum(len(dates) for dates in got.values()) > 10 * JOB_COUNT
