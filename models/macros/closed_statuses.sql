{#-
    Statuses after which no more flying is planned; every other status counts as open.
    var closed_statuses in dbt_project.yml.
-#}
{% macro closed_statuses() -%}
    {{ return(var('closed_statuses')) }}
{%- endmacro %}
