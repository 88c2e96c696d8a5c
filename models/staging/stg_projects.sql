{{ config(materialized=source_staging_materialization()) }}

with

source as (
    select * from {{ source('drone_ops', 'projects') }}
    where _dlt_valid_to is null
),

renamed as (
    select
        id as project_id,
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
        _dlt_valid_from as version_loaded_at
    from source
)

select * from renamed
