{#-
    A status history mart: the rows of one entity type from int_status_intervals (where the
    logic and its unit tests live), under the entity's own column names (project ->
    project_status_interval_id, project_id). fct_project_status_history and
    fct_job_status_history are this with 'project' and 'job'.
-#}
{% macro status_history(intervals_relation, entity_type) -%}
with

intervals as (
    select * from {{ intervals_relation }}
    where entity_type = '{{ entity_type }}'
),

final as (
    select
        workspace,
        status_interval_id as {{ entity_type }}_status_interval_id,
        entity_id as {{ entity_type }}_id,
        interval_number,
        status,
        valid_from,
        valid_to,
        is_current,
        is_closed_by_retirement,
        versions,
        duration_seconds
    from intervals
)

select * from final
{%- endmacro %}
