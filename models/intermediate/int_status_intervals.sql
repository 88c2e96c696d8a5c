{#-
    One row per status interval of a project or a job, from their scd2 versions: consecutive
    versions with the same status merge into one interval. A new interval also starts after a
    gap (an entity retired and seen again). The current interval is open (valid_to null); a
    retired entity's last interval closes when it was retired.
-#}

with

project_versions as (
    select * from {{ ref('stg_drone_ops__project_versions') }}
),

job_versions as (
    select * from {{ ref('stg_drone_ops__job_versions') }}
),

versions as (
    select
        workspace,
        'project' as entity_type,
        project_id as entity_id,
        status,
        valid_from,
        valid_to,
        is_current
    from project_versions

    union all

    select
        workspace,
        'job' as entity_type,
        job_id as entity_id,
        status,
        valid_from,
        valid_to,
        is_current
    from job_versions
),

ordered as (
    select
        workspace,
        entity_type,
        entity_id,
        status,
        valid_from,
        valid_to,
        lag(status) over (
            partition by workspace, entity_type, entity_id order by valid_from
        ) as previous_status,
        lag(valid_to) over (
            partition by workspace, entity_type, entity_id order by valid_from
        ) as previous_valid_to,
        row_number() over (
            partition by workspace, entity_type, entity_id order by valid_from
        ) as version_number
    from versions
),

flagged as (
    select
        *,
        case
            when version_number = 1 then 1
            when (status is distinct from previous_status) then 1
            when (previous_valid_to is distinct from valid_from) then 1
            else 0
        end as starts_interval
    from ordered
),

islands as (
    select
        *,
        cast(sum(starts_interval) over (
            partition by workspace, entity_type, entity_id
            order by valid_from
            rows between unbounded preceding and current row
        ) as {{ dbt.type_bigint() }}) as interval_number
    from flagged
),

intervals as (
    select
        workspace,
        entity_type,
        entity_id,
        interval_number,
        min(status) as status,
        min(valid_from) as valid_from,
        case when count(valid_to) = count(*) then max(valid_to) end as valid_to,
        count(*) as versions
    from islands
    group by workspace, entity_type, entity_id, interval_number
),

current_entities as (
    select distinct
        workspace,
        entity_type,
        entity_id
    from versions
    where is_current
),

final as (
    select
        intervals.workspace,
        {{ dbt.concat([
            'intervals.entity_id',
            "'#'",
            dbt.cast('intervals.interval_number', dbt.type_string()),
        ]) }} as status_interval_id,
        intervals.entity_type,
        intervals.entity_id,
        intervals.interval_number,
        intervals.status,
        intervals.valid_from,
        intervals.valid_to,
        intervals.valid_to is null as is_current,
        intervals.valid_to is not null
        and current_entities.entity_id is null
        and intervals.interval_number = max(intervals.interval_number) over (
            partition by intervals.workspace, intervals.entity_type, intervals.entity_id
        ) as is_closed_by_retirement,
        intervals.versions,
        {{ seconds_between('intervals.valid_from',
            'coalesce(intervals.valid_to, ' ~ dbt.current_timestamp() ~ ')') }} as duration_seconds
    from intervals
    left join current_entities
        on
            intervals.workspace = current_entities.workspace
            and intervals.entity_type = current_entities.entity_type
            and intervals.entity_id = current_entities.entity_id
)

select * from final
