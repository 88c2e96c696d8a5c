{#- One row per status interval of a job (the logic: intermediate/int_status_intervals.sql). -#}

with

intervals as (
    select * from {{ ref('int_status_intervals') }}
    where entity_type = 'job'
),

final as (
    select
        status_interval_id as job_status_interval_id,
        entity_id as job_id,
        interval_number,
        status,
        valid_from,
        valid_to,
        is_current,
        is_closed_by_retirement,
        versions,
        duration_seconds
    from intervals
)

select * from final
