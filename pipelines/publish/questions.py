"""The questions a drone-ops team asks of the marts, each answered by one select: shown by the
demo and checked by the model tests, so the marts keep answering them. Projects and jobs are
listed with their ids: two projects can share a name."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any

from ..run.door import read_only


@dataclass(frozen=True)
class ExampleQuestion:
    """A question a drone-ops team asks, answered by one select over the marts."""

    title: str
    sql: str


# `{marts}` is replaced by the quoted marts schema, e.g. "drone_ops_marts".
EXAMPLE_QUESTIONS: tuple[ExampleQuestion, ...] = (
    ExampleQuestion(
        title="What is flying in the next 7 days, and where?",
        sql="""
            select
                occurrences.workspace,
                occurrences.occurrence_date,
                jobs.project_id,
                jobs.project_name,
                jobs.job_id,
                jobs.name as job_name,
                jobs.job_type_name,
                jobs.priority,
                jobs.latitude,
                jobs.longitude,
                jobs.flights_per_occurrence
            from {marts}.fct_job_occurrences as occurrences
            inner join {marts}.dim_jobs as jobs
                on
                    occurrences.workspace = jobs.workspace
                    and occurrences.job_id = jobs.job_id
            where
                occurrences.occurrence_date >= current_date
                and occurrences.occurrence_date < current_date + 7
                and jobs.is_open
                and not jobs.is_project_archived
            order by
                occurrences.occurrence_date, occurrences.workspace, jobs.project_name, jobs.name
            limit 15
        """,
    ),
    ExampleQuestion(
        title="Which projects are stuck in weather_delayed, and for how long?",
        sql="""
            select
                projects.workspace,
                projects.project_id,
                projects.name as project_name,
                history.valid_from as delayed_since,
                round(history.duration_seconds / 86400.0, 1) as days_delayed,
                projects.jobs_open,
                projects.jobs_weather_delayed
            from {marts}.fct_project_status_history as history
            inner join {marts}.dim_projects as projects
                on
                    history.workspace = projects.workspace
                    and history.project_id = projects.project_id
            where
                history.is_current
                and history.status = 'weather_delayed'
                and not projects.is_archived
            order by history.valid_from, projects.name
            limit 15
        """,
    ),
    ExampleQuestion(
        title="How reliable were the webhooks over the last 30 days?",
        sql="""
            select
                health.workspace,
                health.webhook_id,
                max(health.webhook_name) as webhook_name,
                sum(health.deliveries) as deliveries,
                sum(health.failures) as failures,
                round(1 - sum(health.failures) * 1.0 / sum(health.deliveries), 3)
                    as success_rate,
                max(health.p95_duration_ms) as worst_daily_p95_ms
            from {marts}.fct_webhook_delivery_health_daily as health
            where health.delivery_date >= current_date - 30
            group by health.workspace, health.webhook_id
            order by success_rate, deliveries desc
        """,
    ),
    ExampleQuestion(
        title="How many open flights does each project have in the next 30 days?",
        sql="""
            select
                occurrences.workspace,
                occurrences.project_id,
                occurrences.project_name,
                count(*) as occurrences,
                count(distinct occurrences.job_id) as jobs,
                min(occurrences.occurrence_date) as next_date
            from {marts}.fct_job_occurrences as occurrences
            where
                occurrences.is_job_open
                and occurrences.occurrence_date >= current_date
                and occurrences.occurrence_date < current_date + 30
            group by occurrences.workspace, occurrences.project_id, occurrences.project_name
            order by occurrences desc, occurrences.workspace, occurrences.project_name
            limit 15
        """,
    ),
)


def answer_questions(
    database_path: pathlib.Path, dataset: str = "drone_ops"
) -> list[tuple[str, list[str], list[tuple[Any, ...]]]]:
    """Run EXAMPLE_QUESTIONS on a read-only connection: (title, column names, rows) each."""
    marts = '"' + f"{dataset}_marts".replace('"', '""') + '"'
    answers: list[tuple[str, list[str], list[tuple[Any, ...]]]] = []
    with read_only(database_path) as con:
        for question in EXAMPLE_QUESTIONS:
            cursor = con.execute(question.sql.format(marts=marts))
            columns = [column[0] for column in cursor.description or []]
            answers.append((question.title, columns, [tuple(row) for row in cursor.fetchall()]))
    return answers
