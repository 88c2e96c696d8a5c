{{ config(materialized=source_staging_materialization()) }}

{#-
    The current version of each job. The renaming lives in stg_drone_ops__job_versions;
    this view only keeps the current rows and its own columns. Materialized like the models
    that read raw tables, as it always was.
-#}

with

versions as (
    select * from {{ ref('stg_drone_ops__job_versions') }}
    where is_current
),

current_jobs as (
    select
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
