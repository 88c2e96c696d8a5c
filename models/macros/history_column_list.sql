{#- The non-null items as a list of text: an array on PostgreSQL, a VARCHAR[] on DuckDB. #}
{% macro history_column_list(items) -%}
    {{ return(adapter.dispatch('history_column_list', 'drone_ops')(items)) }}
{%- endmacro %}

{% macro duckdb__history_column_list(items) -%}
    {#- concat_ws skips nulls; no lambda, so a DuckDB 1.x reads the snapshot's macros -#}
    string_split(concat_ws(',', {{ (items or ['null']) | join(', ') }}), ',')
{%- endmacro %}

{% macro default__history_column_list(items) -%}
    array_remove(array[{{ (items or ['null']) | join(', ') }}]::text[], null)
{%- endmacro %}
