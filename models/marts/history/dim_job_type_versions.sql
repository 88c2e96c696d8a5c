with

versions as (
    select * from {{ ref('stg_drone_ops__job_type_versions') }}
)

select * from versions
