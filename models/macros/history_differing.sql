{#- One `case` per compared column: its name when the two rows differ in it, else null. #}
{% macro history_differing(columns) -%}
    {%- set items = [] -%}
    {%- for name in columns -%}
        {%- do items.append(
            "case when from_rows." ~ name ~ " is distinct from to_rows." ~ name
            ~ " then '" ~ name ~ "' end"
        ) -%}
    {%- endfor -%}
    {{ return(items) }}
{%- endmacro %}
