{#-
    One row per status interval of an entity, from its scd2 versions (a staging *_versions
    model with key_column, status, valid_from, valid_to and is_current): consecutive versions
    with the same status merge into one interval. A new interval also starts after a gap (an
    entity retired and seen again). The current interval is open (valid_to null); a retired
    entity's last interval closes when it was retired.

    The interval id column is named after the key: job_id -> job_status_interval_id.
-#}
{% macro status_intervals(versions_relation, key_column) -%}
{%- set entity = key_column[:-3] if key_column.endswith('_id') else key_column -%}
with

versions as (
    select * from {{ versions_relation }}
),

ordered as (
    select
        {{ key_column }},
        status,
        valid_from,
        valid_to,
        lag(status) over (partition by {{ key_column }} order by valid_from) as previous_status,
        lag(valid_to) over (partition by {{ key_column }} order by valid_from) as previous_valid_to,
        row_number() over (partition by {{ key_column }} order by valid_from) as version_number
    from versions
),

flagged as (
    select
        *,
        case
            when version_number = 1 then 1
            when status is distinct from previous_status then 1
            when previous_valid_to is distinct from valid_from then 1
            else 0
        end as starts_interval
    from ordered
),

islands as (
    select
        *,
        cast(sum(starts_interval) over (
            partition by {{ key_column }} order by valid_from rows between unbounded preceding and current row
        ) as {{ dbt.type_bigint() }}) as interval_number
    from flagged
),

intervals as (
    select
        {{ key_column }},
        interval_number,
        min(status) as status,
        min(valid_from) as valid_from,
        case when count(valid_to) = count(*) then max(valid_to) end as valid_to,
        count(*) as versions
    from islands
    group by {{ key_column }}, interval_number
),

current_entities as (
    select distinct {{ key_column }}
    from versions
    where is_current
),

final as (
    select
        {{ dbt.concat(['intervals.' ~ key_column, "'#'", dbt.cast('intervals.interval_number', dbt.type_string())]) }}
            as {{ entity }}_status_interval_id,
        intervals.{{ key_column }},
        intervals.interval_number,
        intervals.status,
        intervals.valid_from,
        intervals.valid_to,
        intervals.valid_to is null as is_current,
        intervals.valid_to is not null
            and current_entities.{{ key_column }} is null
            and intervals.interval_number = max(intervals.interval_number) over (
                partition by intervals.{{ key_column }}
            ) as is_closed_by_retirement,
        intervals.versions,
        {{ seconds_between('intervals.valid_from',
            'coalesce(intervals.valid_to, ' ~ dbt.current_timestamp() ~ ')') }} as duration_seconds
    from intervals
    left join current_entities
        on intervals.{{ key_column }} = current_entities.{{ key_column }}
)

select * from final
{%- endmacro %}
