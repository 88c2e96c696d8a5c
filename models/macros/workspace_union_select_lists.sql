{#-
    The select list of each part of workspace_union: `*` everywhere when the parts' columns
    are the same names in the same order (a single part, the parse, a fleet synced by one
    version); otherwise every column any part has, by name in the order first seen, a column
    a part lacks as `cast(null as <its type elsewhere>)`.
-#}
{% macro workspace_union_select_lists(parts) -%}
    {%- if not execute or parts | length < 2 -%}
        {{ return([['*']] * (parts | length)) }}
    {%- endif -%}
    {%- set columns_per_part = [] -%}
    {%- for part in parts -%}
        {%- do columns_per_part.append(adapter.get_columns_in_relation(part.relation)) -%}
    {%- endfor -%}
    {%- set names_per_part = [] -%}
    {%- for columns in columns_per_part -%}
        {%- do names_per_part.append(columns | map(attribute='name') | map('lower') | list) -%}
    {%- endfor -%}
    {%- if names_per_part | reject('equalto', names_per_part[0]) | list | length == 0 -%}
        {{ return([['*']] * (parts | length)) }}
    {%- endif -%}
    {%- set all_names = [] -%}
    {%- set types = {} -%}
    {%- for columns in columns_per_part -%}
        {%- for column in columns -%}
            {%- if column.name | lower not in all_names -%}
                {%- do all_names.append(column.name | lower) -%}
                {%- do types.update({column.name | lower: column.data_type}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set select_lists = [] -%}
    {%- for names in names_per_part -%}
        {%- set select_list = [] -%}
        {%- for name in all_names -%}
            {%- if name in names -%}
                {%- do select_list.append(adapter.quote(name)) -%}
            {%- else -%}
                {%- do select_list.append(
                    'cast(null as ' ~ types[name] ~ ') as ' ~ adapter.quote(name)
                ) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- do select_lists.append(select_list) -%}
    {%- endfor -%}
    {{ return(select_lists) }}
{%- endmacro %}
