{#- Weekday of a date, 0 = Sunday ... 6 = Saturday (the API's convention). -#}
{% macro day_of_week(date_expr) -%}
    {{ return(adapter.dispatch('day_of_week', 'drone_ops')(date_expr)) }}
{%- endmacro %}

{% macro duckdb__day_of_week(date_expr) -%}
    cast(dayofweek({{ date_expr }}) as integer)
{%- endmacro %}

{% macro default__day_of_week(date_expr) -%}
    cast(extract(dow from {{ date_expr }}) as integer)
{%- endmacro %}
