with

source as (
    select * from {{ source_in_view(source('drone_ops', 'team_members')) }}
    where _dlt_valid_to is null
),

renamed as (
    select
        id as team_member_id,
        email,
        first_name,
        last_name,
        role,
        status,
        title,
        phone_number,
        profile_picture,
        created as created_at,
        updated as updated_at,
        _dlt_valid_from as version_loaded_at
    from source
)

select * from renamed
