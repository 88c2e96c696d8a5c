{#-
    The current version of each project: stg_drone_ops__project_versions (every version, renamed)
    reduced to its current rows and the columns the marts use.
-#}

with

versions as (
    select * from {{ ref('stg_drone_ops__project_versions') }}
    where is_current
),

current_projects as (
    select
        workspace,
        project_id,
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
        valid_from as version_loaded_at
    from versions
)

select * from current_projects
