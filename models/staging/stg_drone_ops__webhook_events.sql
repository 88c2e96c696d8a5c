with

source as (
    {{ workspace_union('_webhook_events') }}
),

renamed as (
    select
        workspace,
        delivery_id,
        event,
        event_timestamp as event_at,
        workspace_id,
        received_at,
        signed as is_signed,
        project_id,
        project_updated as project_updated_at,
        outcome as apply_outcome
    from source
)

select * from renamed
