with

versions as (
    select * from {{ ref('stg_drone_ops__team_member_versions') }}
),

final as (
    select
        workspace,
        team_member_id,
        row_hash,
        email,
        first_name,
        last_name,
        role,
        status,
        title,
        phone_number,
        profile_picture,
        created_at,
        updated_at,
        valid_from,
        valid_to,
        is_current
    from versions
)

select * from final
