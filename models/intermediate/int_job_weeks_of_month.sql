with

parent as (
    select * from {{ ref('int_jobs_current') }}
    where weeks_of_month is not null
),

unnested as (
    select
        workspace,
        job_id,
        {{ json_array_elements_text('weeks_of_month') }} as element
    from parent
),

typed as (
    select
        workspace,
        job_id,
        cast(element as {{ dbt.type_int() }}) as week_of_month
    from unnested
)

select * from typed
