with

projects as (
    select * from {{ ref('int_projects_current') }}
),

users as (
    select * from {{ ref('stg_drone_ops__users') }}
),

jobs as (
    select * from {{ ref('int_jobs_current') }}
),

job_counts as (
    select
        workspace,
        project_id,
        count(*) as jobs_total,
        cast(
            sum(case when status not in {{ quoted_list(closed_statuses()) }} then 1 else 0 end)
            as {{ dbt.type_bigint() }}
        ) as jobs_open,
        -- one column per status; sqlfluff cannot lay out select targets a loop emits
        -- noqa: disable=LT02
        {% for status in statuses() %}
        cast(sum(case when status = '{{ status }}' then 1 else 0 end) as {{ dbt.type_bigint() }})
            as jobs_{{ status }}{{ "," if not loop.last }}
        {% endfor %}
    -- noqa: enable=LT02
    from jobs
    group by workspace, project_id
),

final as (
    select
        projects.workspace,
        projects.project_id,
        projects.name,
        projects.description,
        projects.status,
        projects.other_status_reason,
        projects.is_archived,
        projects.start_date,
        projects.end_date,
        projects.external_id,
        projects.laanc_number,
        projects.created_at,
        projects.updated_at,
        projects.created_by_id,
        users.kind as created_by_kind,
        users.display_name as created_by_name,
        users.email as created_by_email,
        coalesce(job_counts.jobs_total, 0) as jobs_total,
        coalesce(job_counts.jobs_open, 0) as jobs_open,
        -- noqa: disable=LT02
        {% for status in statuses() %}
        coalesce(job_counts.jobs_{{ status }}, 0) as jobs_{{ status }}{{ "," if not loop.last }}
        {% endfor %}
    -- noqa: enable=LT02
    from projects
    left join users
        on
            projects.workspace = users.workspace
            and projects.created_by_id = users.user_id
    left join job_counts
        on
            projects.workspace = job_counts.workspace
            and projects.project_id = job_counts.project_id
)

select * from final
