{{ config(materialized=source_staging_materialization()) }}

{#-
    The current version of each project. The renaming lives in stg_drone_ops__project_versions;
    this view only keeps the current rows and its own columns. Materialized like the models
    that read raw tables, as it always was.
-#}

with

versions as (
    select * from {{ ref('stg_drone_ops__project_versions') }}
    where is_current
),

current_projects as (
    select
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
