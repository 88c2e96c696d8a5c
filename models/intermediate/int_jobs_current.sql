{#-
    The current version of each job: stg_drone_ops__job_versions (every version, renamed)
    reduced to its current rows and the columns the marts use.
-#}

with

versions as (
    select * from {{ ref('stg_drone_ops__job_versions') }}
    where is_current
),

current_jobs as (
    select
        workspace,
        job_id,
        project_id,
        name,
        description,
        job_type_id,
        status,
        other_status_reason,
        priority,
        job_pattern,
        start_date,
        end_date,
        latitude,
        longitude,
        inspection_notes,
        capture_types,
        external_id,
        created_at,
        updated_at,
        recurring_frequency,
        recurring_interval,
        selected_days_of_week,
        week_of_month,
        weeks_of_month,
        flights_per_occurrence,
        valid_from as version_loaded_at
    from versions
)

select * from current_jobs
