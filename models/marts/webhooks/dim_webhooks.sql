with

webhooks as (
    select * from {{ ref('stg_drone_ops__webhooks') }}
),

event_types as (
    select * from {{ ref('int_webhook_event_types') }}
),

users as (
    select * from {{ ref('stg_drone_ops__users') }}
),

event_type_counts as (
    select
        workspace,
        webhook_id,
        count(*) as event_types_count
    from event_types
    group by workspace, webhook_id
),

final as (
    select
        webhooks.workspace,
        webhooks.webhook_id,
        webhooks.name,
        webhooks.url,
        webhooks.status,
        webhooks.failure_count,
        webhooks.event_types,
        coalesce(event_type_counts.event_types_count, 0) as event_types_count,
        webhooks.created_at,
        webhooks.updated_at,
        webhooks.last_triggered_at,
        webhooks.created_by_id,
        users.display_name as created_by_name
    from webhooks
    left join event_type_counts
        on
            webhooks.workspace = event_type_counts.workspace
            and webhooks.webhook_id = event_type_counts.webhook_id
    left join users
        on
            webhooks.workspace = users.workspace
            and webhooks.created_by_id = users.user_id
)

select * from final
