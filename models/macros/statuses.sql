{#- Statuses shared by projects and jobs (API part 3.1): var statuses in dbt_project.yml. -#}
{% macro statuses() -%}
    {{ return(var('statuses')) }}
{%- endmacro %}
