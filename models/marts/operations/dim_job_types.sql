with

job_types as (
    select * from {{ ref('stg_drone_ops__job_types') }}
),

jobs as (
    select * from {{ ref('int_jobs_current') }}
),

job_counts as (
    select
        workspace,
        job_type_id,
        count(*) as jobs_total
    from jobs
    group by workspace, job_type_id
),

final as (
    select
        job_types.workspace,
        job_types.job_type_id,
        job_types.name,
        job_types.icon,
        job_types.is_predefined,
        coalesce(job_counts.jobs_total, 0) as jobs_total
    from job_types
    left join job_counts
        on
            job_types.workspace = job_counts.workspace
            and job_types.job_type_id = job_counts.job_type_id
)

select * from final
