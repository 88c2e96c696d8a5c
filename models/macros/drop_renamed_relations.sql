{#-
    Drops what the models built under names they no longer have, so a warehouse built before
    a rename keeps no stale copy beside the new one (a stale marts table would also be copied
    into the BI snapshot). Run before every build (on-run-start in dbt_project.yml); drops only
    the names listed here, each only when it exists.
-#}
{% macro drop_renamed_relations() -%}
    {%- set renamed = {
        'marts': ['fct_jobs'],
        'stg': [
            'stg_drone_ops__jobs',
            'stg_drone_ops__projects',
            'stg_drone_ops__job_capture_types',
            'stg_drone_ops__job_selected_days_of_week',
            'stg_drone_ops__job_weeks_of_month',
            'stg_drone_ops__webhook_event_types',
        ],
    } -%}
    {%- if execute -%}
        {%- for suffix, names in renamed.items() -%}
            {%- for name in names -%}
                {%- set relation = adapter.get_relation(
                    database=target.database, schema=target.schema ~ '_' ~ suffix, identifier=name
                ) -%}
                {%- if relation is not none -%}
                    {%- do adapter.drop_relation(relation) -%}
                    {{- log('dropped ' ~ relation ~ ': renamed (docs/models.md)', info=true) -}}
                {%- endif -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
