with

users as (
    select * from {{ ref('stg_drone_ops__users') }}
),

projects as (
    select * from {{ ref('int_projects_current') }}
),

webhooks as (
    select * from {{ ref('stg_drone_ops__webhooks') }}
),

projects_created as (
    select
        workspace,
        created_by_id as user_id,
        count(*) as projects_created
    from projects
    group by workspace, created_by_id
),

webhooks_created as (
    select
        workspace,
        created_by_id as user_id,
        count(*) as webhooks_created
    from webhooks
    group by workspace, created_by_id
),

final as (
    select
        users.workspace,
        users.user_id,
        users.kind,
        users.kind = 'api_key' as is_api_key,
        users.display_name,
        users.email,
        users.first_name,
        users.last_name,
        users.profile_picture,
        users.first_seen_at,
        users.last_seen_at,
        coalesce(projects_created.projects_created, 0) as projects_created,
        coalesce(webhooks_created.webhooks_created, 0) as webhooks_created
    from users
    left join projects_created
        on
            users.workspace = projects_created.workspace
            and users.user_id = projects_created.user_id
    left join webhooks_created
        on
            users.workspace = webhooks_created.workspace
            and users.user_id = webhooks_created.user_id
)

select * from final
