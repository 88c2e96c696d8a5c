with

jobs as (
    select * from {{ ref('int_jobs_current') }}
),

projects as (
    select * from {{ ref('int_projects_current') }}
),

job_types as (
    select * from {{ ref('stg_drone_ops__job_types') }}
),

capture_types as (
    select * from {{ ref('int_job_capture_types') }}
),

occurrences as (
    select * from {{ ref('fct_job_occurrences') }}
),

capture_type_counts as (
    select
        workspace,
        job_id,
        count(*) as capture_types_count
    from capture_types
    group by workspace, job_id
),

occurrence_summary as (
    select
        workspace,
        job_id,
        count(*) as planned_occurrences,
        min(occurrence_date) as first_occurrence_date,
        max(occurrence_date) as last_occurrence_date
    from occurrences
    group by workspace, job_id
),

final as (
    select
        jobs.workspace,
        jobs.job_id,
        jobs.name,
        jobs.description,
        jobs.project_id,
        projects.name as project_name,
        projects.status as project_status,
        projects.is_archived as is_project_archived,
        jobs.job_type_id,
        job_types.name as job_type_name,
        job_types.icon as job_type_icon,
        jobs.status,
        jobs.other_status_reason,
        jobs.status not in {{ quoted_list(closed_statuses()) }} as is_open,
        jobs.priority,
        jobs.job_pattern,
        jobs.start_date,
        jobs.end_date,
        jobs.latitude,
        jobs.longitude,
        jobs.latitude is not null and jobs.longitude is not null as has_coordinates,
        jobs.recurring_frequency,
        jobs.recurring_interval,
        jobs.selected_days_of_week,
        jobs.week_of_month,
        jobs.weeks_of_month,
        jobs.flights_per_occurrence,
        jobs.capture_types,
        coalesce(capture_type_counts.capture_types_count, 0) as capture_types_count,
        coalesce(occurrence_summary.planned_occurrences, 0) as planned_occurrences,
        occurrence_summary.first_occurrence_date,
        occurrence_summary.last_occurrence_date,
        jobs.inspection_notes,
        jobs.external_id,
        jobs.created_at,
        jobs.updated_at
    from jobs
    left join projects
        on
            jobs.workspace = projects.workspace
            and jobs.project_id = projects.project_id
    left join job_types
        on
            jobs.workspace = job_types.workspace
            and jobs.job_type_id = job_types.job_type_id
    left join capture_type_counts
        on
            jobs.workspace = capture_type_counts.workspace
            and jobs.job_id = capture_type_counts.job_id
    left join occurrence_summary
        on
            jobs.workspace = occurrence_summary.workspace
            and jobs.job_id = occurrence_summary.job_id
)

select * from final
