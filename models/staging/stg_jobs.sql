{{ config(materialized=source_staging_materialization()) }}

with

source as (
    select * from {{ source('drone_ops', 'jobs') }}
    where _dlt_valid_to is null
),

renamed as (
    select
        id as job_id,
        project_id,
        name,
        description,
        type as job_type_id,
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
        created as created_at,
        updated as updated_at,
        recurring_frequency,
        recurring_interval,
        selected_days_of_week,
        week_of_month,
        weeks_of_month,
        flights_per_occurrence,
        _dlt_valid_from as version_loaded_at
    from source
)

select * from renamed
