with

team_members as (
    select * from {{ ref('stg_drone_ops__team_members') }}
),

final as (
    select
        workspace,
        team_member_id,
        email,
        first_name,
        last_name,
        trim(
            {{ dbt.concat(["coalesce(first_name, '')", "' '", "coalesce(last_name, '')"]) }}
        ) as full_name,
        role,
        role = 'pilot' as is_pilot,
        status,
        title,
        phone_number,
        profile_picture,
        created_at,
        updated_at
    from team_members
)

select * from final
