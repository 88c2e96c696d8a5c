with

parent as (
    select * from {{ ref('int_jobs_current') }}
    where capture_types is not null
),

unnested as (
    select
        workspace,
        job_id,
        {{ json_array_elements_text('capture_types') }} as element
    from parent
),

typed as (
    select
        workspace,
        job_id,
        element as capture_type
    from unnested
)

select * from typed
