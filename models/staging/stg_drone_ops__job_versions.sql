with

source as (
    {{ workspace_union('jobs') }}
),

renamed as (
    select
        workspace,
        id as job_id,
        _row_hash as row_hash,
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
        _dlt_valid_from as valid_from,
        _dlt_valid_to as valid_to,
        _dlt_valid_to is null as is_current
    from source
)

select * from renamed
