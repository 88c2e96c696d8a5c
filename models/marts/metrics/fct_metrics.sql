{#-
    The metrics the dashboard, the demo and `drone-sync metrics` show, each declared once here:
    its name, label, unit, description and the measure it counts (docs/metrics.md). A rate
    names its numerator and denominator measures; value = numerator / denominator, so workspaces
    combine by summing both. "Today" is the UTC date of the build (measured_date).
-#}
{%- set metrics = [
    {'name': 'projects_open', 'label': 'Open projects', 'unit': 'count',
     'numerator': 'projects_open',
     'description': 'Current projects, not archived, whose status is not closed'
        ~ ' (completed, cancelled, aborted).'},
    {'name': 'projects_overdue', 'label': 'Overdue projects', 'unit': 'count',
     'numerator': 'projects_overdue',
     'description': 'Open projects whose end_date is before today (UTC).'},
    {'name': 'projects_on_hold', 'label': 'Projects on hold', 'unit': 'count',
     'numerator': 'projects_on_hold',
     'description': 'Unarchived projects in status on_hold.'},
    {'name': 'projects_weather_delayed', 'label': 'Projects weather delayed', 'unit': 'count',
     'numerator': 'projects_weather_delayed',
     'description': 'Unarchived projects in status weather_delayed.'},
    {'name': 'jobs_open', 'label': 'Open jobs', 'unit': 'count',
     'numerator': 'jobs_open',
     'description': 'Current jobs of unarchived projects whose status is not closed.'},
    {'name': 'jobs_overdue', 'label': 'Overdue jobs', 'unit': 'count',
     'numerator': 'jobs_overdue',
     'description': 'Open jobs of unarchived projects whose end_date is before today (UTC).'},
    {'name': 'jobs_on_hold', 'label': 'Jobs on hold', 'unit': 'count',
     'numerator': 'jobs_on_hold',
     'description': 'Jobs of unarchived projects in status on_hold.'},
    {'name': 'jobs_mapped', 'label': 'Jobs on the map', 'unit': 'count',
     'numerator': 'jobs_mapped',
     'description': 'Current jobs of unarchived projects with coordinates: the points of the'
        ~ ' dashboard map.'},
    {'name': 'flights_next_7_days', 'label': 'Flights planned, next 7 days', 'unit': 'count',
     'numerator': 'flights_next_7_days',
     'description': 'Flights of the occurrences dated today (UTC) to 6 days ahead, of open jobs'
        ~ ' of unarchived projects: flights_per_occurrence per occurrence (1 when unset).'},
    {'name': 'flights_next_30_days', 'label': 'Flights planned, next 30 days', 'unit': 'count',
     'numerator': 'flights_next_30_days',
     'description': 'As flights_next_7_days, for the occurrences dated today to 29 days ahead.'},
    {'name': 'webhook_deliveries_30_days', 'label': 'Webhook deliveries, 30 days',
     'unit': 'count', 'numerator': 'deliveries_30_days',
     'description': 'Webhook delivery log entries of the last 30 UTC days, today included.'},
    {'name': 'webhook_failures_30_days', 'label': 'Webhook failures, 30 days', 'unit': 'count',
     'numerator': 'failures_30_days',
     'description': 'Of those, the deliveries whose status is not success.'},
    {'name': 'webhook_success_rate_30_days', 'label': 'Webhook success rate, 30 days',
     'unit': 'ratio', 'numerator': 'successes_30_days', 'denominator': 'deliveries_30_days',
     'description': 'Successful deliveries / deliveries over the last 30 UTC days; null'
        ~ ' without deliveries.'},
] -%}

with

today as (
    select {{ utc_date('current_timestamp') }} as measured_date
),

projects as (
    select * from {{ ref('dim_projects') }}
    where not is_archived
),

jobs as (
    select * from {{ ref('dim_jobs') }}
    where not is_project_archived
),

occurrences as (
    select * from {{ ref('fct_job_occurrences') }}
),

health as (
    select * from {{ ref('fct_webhook_delivery_health_daily') }}
),

workspaces as (
    select workspace from projects
    union
    select workspace from jobs
    union
    select workspace from health
),

project_measures as (
    select
        projects.workspace,
        sum(case when projects.status not in {{ quoted_list(closed_statuses()) }} then 1 else 0 end)
            as projects_open,
        sum(
            case
                when
                    projects.status not in {{ quoted_list(closed_statuses()) }}
                    and projects.end_date < today.measured_date
                    then 1
                else 0
            end
        ) as projects_overdue,
        sum(case when projects.status = 'on_hold' then 1 else 0 end) as projects_on_hold,
        sum(case when projects.status = 'weather_delayed' then 1 else 0 end)
            as projects_weather_delayed
    from projects
    cross join today
    group by projects.workspace
),

job_measures as (
    select
        jobs.workspace,
        sum(case when jobs.is_open then 1 else 0 end) as jobs_open,
        sum(case when jobs.is_open and jobs.end_date < today.measured_date then 1 else 0 end)
            as jobs_overdue,
        sum(case when jobs.status = 'on_hold' then 1 else 0 end) as jobs_on_hold,
        sum(case when jobs.has_coordinates then 1 else 0 end) as jobs_mapped
    from jobs
    cross join today
    group by jobs.workspace
),

flight_measures as (
    select
        jobs.workspace,
        sum(
            case
                when occurrences.occurrence_date < {{ add_days('today.measured_date', 7) }}
                    then coalesce(jobs.flights_per_occurrence, 1)
                else 0
            end
        ) as flights_next_7_days,
        sum(coalesce(jobs.flights_per_occurrence, 1)) as flights_next_30_days
    from occurrences
    inner join jobs
        on
            occurrences.workspace = jobs.workspace
            and occurrences.job_id = jobs.job_id
    cross join today
    where
        jobs.is_open
        and occurrences.occurrence_date >= today.measured_date
        and occurrences.occurrence_date < {{ add_days('today.measured_date', 30) }}
    group by jobs.workspace
),

delivery_measures as (
    select
        health.workspace,
        sum(health.deliveries) as deliveries_30_days,
        sum(health.successes) as successes_30_days,
        sum(health.failures) as failures_30_days
    from health
    cross join today
    where health.delivery_date >= {{ add_days('today.measured_date', -29) }}
    group by health.workspace
),

measures as (
    select
        workspaces.workspace,
        coalesce(project_measures.projects_open, 0) as projects_open,
        coalesce(project_measures.projects_overdue, 0) as projects_overdue,
        coalesce(project_measures.projects_on_hold, 0) as projects_on_hold,
        coalesce(project_measures.projects_weather_delayed, 0) as projects_weather_delayed,
        coalesce(job_measures.jobs_open, 0) as jobs_open,
        coalesce(job_measures.jobs_overdue, 0) as jobs_overdue,
        coalesce(job_measures.jobs_on_hold, 0) as jobs_on_hold,
        coalesce(job_measures.jobs_mapped, 0) as jobs_mapped,
        coalesce(flight_measures.flights_next_7_days, 0) as flights_next_7_days,
        coalesce(flight_measures.flights_next_30_days, 0) as flights_next_30_days,
        coalesce(delivery_measures.deliveries_30_days, 0) as deliveries_30_days,
        coalesce(delivery_measures.successes_30_days, 0) as successes_30_days,
        coalesce(delivery_measures.failures_30_days, 0) as failures_30_days
    from workspaces
    left join project_measures on workspaces.workspace = project_measures.workspace
    left join job_measures on workspaces.workspace = job_measures.workspace
    left join flight_measures on workspaces.workspace = flight_measures.workspace
    left join delivery_measures on workspaces.workspace = delivery_measures.workspace
),

-- one select per declared metric; sqlfluff cannot lay out what a loop emits
-- noqa: disable=LT02
declared as (
    {% for metric in metrics %}
    select
        workspace,
        '{{ metric.name }}' as metric,
        {{ loop.index }} as display_order,
        '{{ metric.label }}' as label,  -- noqa: RF04
        '{{ metric.unit }}' as unit,
        '{{ metric.description | replace("'", "''") }}' as description,
        cast({{ metric.numerator }} as {{ type_double() }}) as numerator,
        {% if metric.denominator %}
        cast({{ metric.denominator }} as {{ type_double() }}) as denominator
        {% else %}
        cast(null as {{ type_double() }}) as denominator
        {% endif %}
    from measures
    {{ "union all" if not loop.last }}
    {% endfor %}
),
-- noqa: enable=LT02

final as (
    select
        declared.workspace,
        declared.metric,
        declared.display_order,
        declared.label,
        declared.unit,
        declared.description,
        declared.numerator,
        declared.denominator,
        case
            when declared.unit = 'count' then declared.numerator
            when declared.denominator > 0 then declared.numerator / declared.denominator
        end as value,  -- noqa: RF04
        today.measured_date
    from declared
    cross join today
)

select * from final
