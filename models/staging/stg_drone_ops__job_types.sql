with

source as (
    select * from {{ source_in_view(source('drone_ops', 'job_types')) }}
    where _dlt_valid_to is null
),

renamed as (
    select
        id as job_type_id,
        name,
        icon,
        is_predefined,
        _dlt_valid_from as version_loaded_at
    from source
)

select * from renamed
