with

source as (
    {{ workspace_union('job_types') }}
),

current_versions as (
    select * from source
    where _dlt_valid_to is null
),

renamed as (
    select
        workspace,
        id as job_type_id,
        name,
        icon,
        is_predefined,
        _dlt_valid_from as version_loaded_at
    from current_versions
)

select * from renamed
