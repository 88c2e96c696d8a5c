with

deliveries as (
    select * from {{ ref('stg_drone_ops__webhook_deliveries') }}
),

webhooks as (
    select * from {{ ref('stg_drone_ops__webhooks') }}
),

final as (
    select
        deliveries.workspace,
        deliveries.webhook_delivery_id,
        deliveries.webhook_id,
        webhooks.name as webhook_name,
        deliveries.event_type,
        deliveries.url,
        deliveries.status,
        deliveries.status = 'success' as is_success,
        deliveries.response_status,
        deliveries.error_message,
        deliveries.duration_ms,
        deliveries.created_at,
        {{ utc_date('deliveries.created_at') }} as delivery_date,
        deliveries.delivery_id is not null or deliveries.event is not null as is_payload_parsed,
        deliveries.delivery_id,
        deliveries.event,
        deliveries.workspace_id,
        deliveries.event_at,
        {{ seconds_between('deliveries.event_at', 'deliveries.created_at') }}
            as event_to_delivery_seconds,
        deliveries.data,
        deliveries.request_payload,
        deliveries.response_body
    from deliveries
    left join webhooks
        on
            deliveries.workspace = webhooks.workspace
            and deliveries.webhook_id = webhooks.webhook_id
)

select * from final
