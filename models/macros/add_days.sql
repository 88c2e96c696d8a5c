{#-
    Date plus a whole number of days (an integer expression), as a date. DuckDB and PostgreSQL
    both add an integer to a date directly, which is much cheaper than interval arithmetic on
    the millions of rows of the occurrence calendar; other adapters use dbt.dateadd.
-#}
{% macro add_days(date_expr, days_expr) -%}
    {{ return(adapter.dispatch('add_days', 'drone_ops')(date_expr, days_expr)) }}
{%- endmacro %}

{% macro duckdb__add_days(date_expr, days_expr) -%}
    ({{ date_expr }} + cast({{ days_expr }} as integer))
{%- endmacro %}

{% macro postgres__add_days(date_expr, days_expr) -%}
    ({{ date_expr }} + cast({{ days_expr }} as integer))
{%- endmacro %}

{% macro default__add_days(date_expr, days_expr) -%}
    cast({{ dbt.dateadd('day', days_expr, date_expr) }} as date)
{%- endmacro %}
