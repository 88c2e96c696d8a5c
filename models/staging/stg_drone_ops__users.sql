with

source as (
    select * from {{ source_in_view(source('drone_ops', 'users')) }}
),

renamed as (
    select
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
