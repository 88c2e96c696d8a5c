{#- Elements of a JSON array column as text, one row each; used in a select list. -#}
{% macro json_array_elements_text(column) -%}
    {{ return(adapter.dispatch('json_array_elements_text', 'drone_ops')(column)) }}
{%- endmacro %}

{% macro duckdb__json_array_elements_text(column) -%}
    unnest(from_json({{ column }}, '["VARCHAR"]'))
{%- endmacro %}

{% macro default__json_array_elements_text(column) -%}
    jsonb_array_elements_text(
        case
            when jsonb_typeof(cast({{ column }} as jsonb)) = 'array' then cast({{ column }} as jsonb)
            else cast('[]' as jsonb)
        end
    )
{%- endmacro %}
