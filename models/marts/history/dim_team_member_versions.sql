with

versions as (
    select * from {{ ref('stg_drone_ops__team_member_versions') }}
)

select * from versions
