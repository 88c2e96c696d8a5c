with

versions as (
    select * from {{ ref('stg_drone_ops__job_type_versions') }}
),

final as (
    select
        workspace,
        job_type_id,
        row_hash,
        name,
        icon,
        is_predefined,
        valid_from,
        valid_to,
        is_current
    from versions
)

select * from final
