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
