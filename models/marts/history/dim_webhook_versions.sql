with

versions as (
    select * from {{ ref('stg_drone_ops__webhook_versions') }}
)

select * from versions
