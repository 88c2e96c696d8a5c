{#- A parenthesised list of string literals, for `in`: ['a', 'b'] -> ('a', 'b'). -#}
{% macro quoted_list(values) -%}
    ({%- for value in values -%}
        '{{ value | replace("'", "''") }}'{{ ", " if not loop.last }}
    {%- endfor -%})
{%- endmacro %}
