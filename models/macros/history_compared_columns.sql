{#-
    [key, compared columns] of a history relation or raw table, from the database (nothing
    while dbt parses: `execute` is false and the SQL is never run).
-#}
{% macro history_compared_columns(relation, key=none, valid_from=none, valid_to=none) -%}
    {%- if relation is string -%}
        {%- set source_relation = source('drone_ops', relation) -%}
        {%- set first = workspaces(source_relation.schema)[0] -%}
        {%- set inspected = source_relation.incorporate(path={'schema': first['schema']}) -%}
    {%- else -%}
        {%- set inspected = relation -%}
    {%- endif -%}
    {%- set names = [] -%}
    {%- if execute -%}
        {%- for column in adapter.get_columns_in_relation(inspected) -%}
            {%- do names.append(column.name | lower) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if key is none -%}
        {%- set ids = [] -%}
        {%- for name in names if name.endswith('_id') -%}
            {%- do ids.append(name) -%}
        {%- endfor -%}
        {%- set key = ['workspace', 'id' if relation is string else (ids[0] if ids else 'id')] -%}
    {%- endif -%}
    {%- set ignored = ['_row_hash', '_sync_tombstone', 'row_hash', 'is_current', 'valid_from', 'valid_to']
        + history_validity(relation, valid_from, valid_to) -%}
    {%- set columns = [] -%}
    {%- for name in names -%}
        {%- if name not in key and name not in ignored and not name.startswith('_dlt_') -%}
            {%- do columns.append(name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return([key, columns]) }}
{%- endmacro %}
