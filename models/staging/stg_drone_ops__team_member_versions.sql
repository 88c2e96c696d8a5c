with

source as (
    {{ workspace_union('team_members') }}
),

renamed as (
    select
        workspace,
        id as team_member_id,
        _row_hash as row_hash,
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
        _dlt_valid_from as valid_from,
        _dlt_valid_to as valid_to,
        _dlt_valid_to is null as is_current
    from source
)

select * from renamed
