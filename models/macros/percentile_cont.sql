{#- Continuous percentile; the ordered-set syntax works in DuckDB and PostgreSQL alike. -#}
{% macro percentile_cont(fraction, column) -%}
    {{ return(adapter.dispatch('percentile_cont', 'drone_ops')(fraction, column)) }}
{%- endmacro %}

{% macro default__percentile_cont(fraction, column) -%}
    percentile_cont({{ fraction }}) within group (order by {{ column }})
{%- endmacro %}
