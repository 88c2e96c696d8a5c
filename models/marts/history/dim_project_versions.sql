with

versions as (
    select * from {{ ref('stg_drone_ops__project_versions') }}
),

final as (
    select
        workspace,
        project_id,
        row_hash,
        name,
        description,
        status,
        other_status_reason,
        start_date,
        end_date,
        created_at,
        updated_at,
        is_archived,
        external_id,
        laanc_number,
        created_by_id,
        valid_from,
        valid_to,
        is_current
    from versions
)

select * from final
