{#-
    What changed in a history (scd2) table between `from_at` and `to_at`: one row per entity
    whose row as_of(from_at) differs from its row as_of(to_at), with its key, `change`
    ('new': no row at from_at; 'retired': no row at to_at, deleted in between; 'changed': a
    row at both that differs in at least one compared column) and `changed_columns` (the
    names of the columns that differ, in the relation's column order; null for new and
    retired rows). An entity changed and changed back in between compares equal and is left
    out: it is a comparison of two moments, not a list of every version in between.

    - `relation`, `valid_from`, `valid_to`: as in as_of. `key`: the columns that name an entity
      (default: workspace and `id` for a raw table, workspace and the relation's first
      column ending in `_id` otherwise).
    - Compared: every column but the key, the validity and the bookkeeping (`_dlt_*`,
      `_row_hash`, `_sync_tombstone`, `row_hash`, `is_current`): a version whose row hash
      moved while no column did (a field the table does not keep) is not a change here.
    - The columns are read from the database when the SQL is rendered (a raw table: the first
      workspace's), so a column added later is compared once the SQL is rendered again.
-#}
{% macro changed_between(relation, from_at, to_at, key=none, valid_from=none, valid_to=none) -%}
    {%- set compared = history_compared_columns(relation, key, valid_from, valid_to) -%}
    {%- set key = compared[0] -%}
    {%- set columns = compared[1] -%}
    with

    from_rows as (
        {{ as_of(relation, from_at, valid_from, valid_to) }}
    ),

    to_rows as (
        {{ as_of(relation, to_at, valid_from, valid_to) }}
    ),

    compared as (
        select
            {%- for name in key %}
            coalesce(to_rows.{{ name }}, from_rows.{{ name }}) as {{ name }},
            {%- endfor %}
            case
                when from_rows.{{ key[-1] }} is null then 'new'
                when to_rows.{{ key[-1] }} is null then 'retired'
                else 'changed'
            end as change,
            case
                when from_rows.{{ key[-1] }} is not null and to_rows.{{ key[-1] }} is not null
                    then {{ history_column_list(history_differing(columns)) }}
            end as changed_columns
        from from_rows
        full outer join to_rows
            on
            {%- for name in key %}
                {% if not loop.first %}and {% endif %}from_rows.{{ name }} = to_rows.{{ name }}
            {%- endfor %}
        where
            from_rows.{{ key[-1] }} is null
            or to_rows.{{ key[-1] }} is null
            {%- for name in columns %}
            or from_rows.{{ name }} is distinct from to_rows.{{ name }}
            {%- endfor %}
    )

    select * from compared
{%- endmacro %}

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
