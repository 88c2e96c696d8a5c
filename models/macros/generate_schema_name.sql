{#-
    Staging views go to <dataset>_stg, marts tables to <dataset>_marts. The raw tables stay in
    <dataset>, and dlt owns <dataset>_staging, so neither name may be produced here. The folder
    is read from the node's fqn (drone_ops, <folder under models/models/>, ..., <name>), the
    same path the folder keys of dbt_project.yml match: models/models/marts/ gives _marts,
    every other model _stg.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is not none -%}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {%- elif node is not none and node.resource_type in ('model', 'seed', 'snapshot')
        and node.fqn | length > 2 and node.fqn[1] == 'marts' -%}
        {{ target.schema }}_marts
    {%- elif node is not none and node.resource_type in ('model', 'seed', 'snapshot') -%}
        {{ target.schema }}_stg
    {%- else -%}
        {{ target.schema }}
    {%- endif -%}
{%- endmacro %}
