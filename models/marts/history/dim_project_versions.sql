with

versions as (
    select * from {{ ref('stg_drone_ops__project_versions') }}
)

select * from versions
