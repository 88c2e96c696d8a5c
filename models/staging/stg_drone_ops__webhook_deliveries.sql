with

source as (
    {{ workspace_union('webhook_deliveries') }}
),

renamed as (
    select
        workspace,
        id as webhook_delivery_id,
        webhook_id,
        event_type,
        url,
        status,
        response_status,
        response_body,
        error_message,
        duration_ms,
        created as created_at,
        request_payload,
        delivery_id,
        event,
        workspace_id,
        event_timestamp as event_at,
        data
    from source
)

select * from renamed
