with

source as (
    {{ workspace_union('webhooks') }}
),

current_versions as (
    select * from source
    where _dlt_valid_to is null
),

renamed as (
    select
        workspace,
        id as webhook_id,
        name,
        url,
        event_types,
        status,
        failure_count,
        created as created_at,
        updated as updated_at,
        last_triggered_at,
        created_by_id,
        _dlt_valid_from as version_loaded_at
    from current_versions
)

select * from renamed
