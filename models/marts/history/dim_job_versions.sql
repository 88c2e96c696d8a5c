with

versions as (
    select * from {{ ref('stg_drone_ops__job_versions') }}
),

final as (
    select
        workspace,
        job_id,
        row_hash,
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
        valid_from,
        valid_to,
        is_current
    from versions
)

select * from final
