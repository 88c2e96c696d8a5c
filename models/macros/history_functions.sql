{#-
    The on-run-end hook (dbt_project.yml): for each history table, two table functions in the
    marts schema beside its versions mart, so a BI tool or a person asks with one call:

        select * from drone_ops_marts.projects_as_of(timestamptz '2026-11-20 12:00:00+00')
        select * from drone_ops_marts.projects_changed(timestamptz '...', timestamptz '...')

    Their bodies are as_of and changed_between over the mart. DuckDB: table macros, stored in
    the warehouse file, and copied into the BI snapshot (pipelines/publish/history_macros.py),
    so their bodies name the mart without the catalog. PostgreSQL: SQL functions returning a
    table whose columns are the mart's, so rebuilding the mart does not drop them.

    Run after every invocation that builds (a partial one too), for every versions mart that
    exists: (re)creating them is cheap and keeps them in step with the marts' columns. The
    statements are the hook's own SQL, ended by a commit: dbt runs a hook in a transaction that
    it rolls back afterwards (seen with dbt-duckdb 1.11).
-#}
{% macro history_functions() -%}
    {%- set statements = [] -%}
    {%- if execute -%}
        {%- set schema = generate_schema_name('marts', none) | trim -%}
        {%- for history in history_tables() -%}
            {%- set relation = adapter.get_relation(
                database=target.database, schema=schema, identifier=history['model']
            ) -%}
            {%- if relation is not none -%}
                {%- do statements.append(history_functions_sql(
                    relation, schema, history['table'], history['key']
                )) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {#- the hook's SQL; dbt rolls the hook's transaction back when it ends, so it commits -#}
    {{ statements | join('\n') if statements else 'select 1' }}
    {%- if statements %}
    commit;
    {%- endif -%}
{%- endmacro %}
