{#- Exact seconds between two timestamps (fractions kept), as a double. -#}
{% macro seconds_between(start_expr, end_expr) -%}
    {{ return(adapter.dispatch('seconds_between', 'drone_ops')(start_expr, end_expr)) }}
{%- endmacro %}

{% macro default__seconds_between(start_expr, end_expr) -%}
    cast(extract(epoch from ({{ end_expr }} - {{ start_expr }})) as {{ type_double() }})
{%- endmacro %}
