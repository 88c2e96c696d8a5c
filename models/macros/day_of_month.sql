{#- Day of the month of a date, as an integer. -#}
{% macro day_of_month(date_expr) -%}
    cast(extract(day from {{ date_expr }}) as integer)
{%- endmacro %}
