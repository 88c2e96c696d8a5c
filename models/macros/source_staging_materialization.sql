{#-
    Materialization of the staging models that read raw tables. Views, except where DuckDB
    refuses them: when the database file's catalog has the dataset's name (drone_ops.duckdb
    holding schema drone_ops, the default), DuckDB 2.0 rejects a view over
    "drone_ops"."drone_ops"."<table>" as an ambiguous reference, while a table over the same
    select works. There the staging models are tables, rebuilt on every run.
-#}
{% macro source_staging_materialization() -%}
    {%- if target.type == 'duckdb' and target.database == target.schema -%}
        {{ return('table') }}
    {%- else -%}
        {{ return('view') }}
    {%- endif -%}
{%- endmacro %}
