{#- One row per status interval of a project (the logic: intermediate/int_status_intervals.sql). -#}

with

intervals as (
    select * from {{ ref('int_status_intervals') }}
    where entity_type = 'project'
),

final as (
    select
        status_interval_id as project_status_interval_id,
        entity_id as project_id,
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
