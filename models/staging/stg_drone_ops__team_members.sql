with

source as (
    {{ workspace_union('team_members') }}
),

current_versions as (
    select * from source
    where _dlt_valid_to is null
),

renamed as (
    select
        workspace,
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
    from current_versions
)

select * from renamed
