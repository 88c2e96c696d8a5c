{#-
    The statements that (re)create one history table's two functions, `<table>_as_of` and
    `<table>_changed`, over its versions mart `relation` in `schema` (history_functions.sql,
    the hook, says why each adapter's are as they are).
-#}
{% macro history_functions_sql(relation, schema, table, key) -%}
    {{ return(adapter.dispatch('history_functions_sql', 'drone_ops')(relation, schema, table, key)) }}
{%- endmacro %}

{% macro duckdb__history_functions_sql(relation, schema, table, key) -%}
    {%- set mart = relation.include(database=false) -%}
    create or replace macro {{ adapter.quote(schema) }}.{{ table }}_as_of(at_time) as table
    {{ as_of(mart, 'at_time') }};
    create or replace macro {{ adapter.quote(schema) }}.{{ table }}_changed(from_time, to_time) as table
    {{ changed_between(mart, 'from_time', 'to_time', key=key) }};
{%- endmacro %}

{% macro postgres__history_functions_sql(relation, schema, table, key) -%}
    {%- set columns = adapter.get_columns_in_relation(relation) -%}
    {%- set function = adapter.quote(schema) ~ '.' ~ table -%}
    drop function if exists {{ function }}_as_of(timestamptz);
    create function {{ function }}_as_of(at_time timestamptz)
    returns table (
        {%- for column in columns %}
        {{ adapter.quote(column.name) }} {{ column.data_type }}{% if not loop.last %},{% endif %}
        {%- endfor %}
    )
    language sql stable
    as $as_of$
    {{ as_of(relation, 'at_time') }}
    $as_of$;
    drop function if exists {{ function }}_changed(timestamptz, timestamptz);
    create function {{ function }}_changed(from_time timestamptz, to_time timestamptz)
    returns table (
        {%- for name in key %}
        {{ adapter.quote(name) }} text,
        {%- endfor %}
        change text,
        changed_columns text[]
    )
    language sql stable
    as $changed$
    {{ changed_between(relation, 'from_time', 'to_time', key=key) }}
    $changed$;
{%- endmacro %}
