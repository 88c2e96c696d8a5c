{#-
    Staging views go to <dataset>_stg, marts tables to <dataset>_marts. The raw tables stay in
    <dataset>, and dlt owns <dataset>_staging, so neither name may be produced here. Both folders
    are model paths, so the folder is read from the file path.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is not none -%}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {%- elif node is not none and node.resource_type in ('model', 'seed', 'snapshot')
        and node.original_file_path.startswith('marts') -%}
        {{ target.schema }}_marts
    {%- elif node is not none and node.resource_type in ('model', 'seed', 'snapshot') -%}
        {{ target.schema }}_stg
    {%- else -%}
        {{ target.schema }}
    {%- endif -%}
{%- endmacro %}
