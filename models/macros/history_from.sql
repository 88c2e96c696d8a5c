{#- What as_of and changed_between read: a relation as is, a raw table of every workspace. #}
{% macro history_from(relation) -%}
    {%- if relation is string -%}
        (
    {{ workspace_union(relation) }}
    ) as history_rows
    {%- else -%}
        {{ relation }}
    {%- endif -%}
{%- endmacro %}
