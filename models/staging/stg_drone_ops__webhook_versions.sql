with

source as (
    {{ workspace_union('webhooks') }}
),

renamed as (
    select
        workspace,
        id as webhook_id,
        _row_hash as row_hash,
        name,
        url,
        event_types,
        status,
        failure_count,
        created as created_at,
        updated as updated_at,
        last_triggered_at,
        created_by_id,
        _dlt_valid_from as valid_from,
        _dlt_valid_to as valid_to,
        _dlt_valid_to is null as is_current
    from source
)

select * from renamed
