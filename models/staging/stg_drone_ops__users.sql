with

source as (
    {{ workspace_union('users') }}
),

renamed as (
    select
        workspace,
        id as user_id,
        kind,
        email,
        first_name,
        last_name,
        profile_picture,
        display_name,
        first_seen_at,
        last_seen_at
    from source
)

select * from renamed
