with

source as (
    {{ workspace_union('projects') }}
),

renamed as (
    select
        workspace,
        id as project_id,
        _row_hash as row_hash,
        name,
        description,
        status,
        other_status_reason,
        start_date,
        end_date,
        created as created_at,
        updated as updated_at,
        archived as is_archived,
        external_id,
        laanc_number,
        created_by_id,
        _dlt_valid_from as valid_from,
        _dlt_valid_to as valid_to,
        _dlt_valid_to is null as is_current
    from source
)

select * from renamed
