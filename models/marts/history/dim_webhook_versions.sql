with

versions as (
    select * from {{ ref('stg_drone_ops__webhook_versions') }}
),

final as (
    select
        workspace,
        webhook_id,
        row_hash,
        name,
        url,
        event_types,
        status,
        failure_count,
        created_at,
        updated_at,
        last_triggered_at,
        created_by_id,
        valid_from,
        valid_to,
        is_current
    from versions
)

select * from final
