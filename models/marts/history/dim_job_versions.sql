with

versions as (
    select * from {{ ref('stg_drone_ops__job_versions') }}
)

select * from versions
