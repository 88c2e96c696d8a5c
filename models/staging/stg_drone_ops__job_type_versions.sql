with

source as (
    {{ workspace_union('job_types') }}
),

renamed as (
    select
        workspace,
        id as job_type_id,
        _row_hash as row_hash,
        name,
        icon,
        is_predefined,
        _dlt_valid_from as valid_from,
        _dlt_valid_to as valid_to,
        _dlt_valid_to is null as is_current
    from source
)

select * from renamed
