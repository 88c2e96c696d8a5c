with

parent as (
    select * from {{ ref('int_jobs_current') }}
    where selected_days_of_week is not null
),

unnested as (
    select
        workspace,
        job_id,
        {{ json_array_elements_text('selected_days_of_week') }} as element
    from parent
),

typed as (
    select
        workspace,
        job_id,
        cast(element as {{ dbt.type_int() }}) as day_of_week
    from unnested
)

select * from typed
