{#-
    A model's schema is <dataset>_<its +schema>: dbt_project.yml gives staging and
    intermediate models `stg` and marts `marts`. The raw tables stay in <dataset>, and dlt owns
    <dataset>_staging, so a model without a +schema still goes to <dataset>_stg, never to one of
    those.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is not none -%}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {%- elif node is not none and node.resource_type in ('model', 'seed', 'snapshot') -%}
        {{ target.schema }}_stg
    {%- else -%}
        {{ target.schema }}
    {%- endif -%}
{%- endmacro %}
