{#- The validity columns of a raw table (dlt's) or of a versions relation (the house names). #}
{% macro history_validity(relation, valid_from=none, valid_to=none) -%}
    {%- if relation is string -%}
        {{ return([valid_from or '_dlt_valid_from', valid_to or '_dlt_valid_to']) }}
    {%- endif -%}
    {{ return([valid_from or 'valid_from', valid_to or 'valid_to']) }}
{%- endmacro %}
