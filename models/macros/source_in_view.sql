{#-
    A raw table as a staging view may read it. DuckDB names a database file's catalog after the
    file, so drone_ops.duckdb holding the dataset drone_ops has catalog and schema of one name;
    DuckDB 2.0 then refuses a view over "drone_ops"."drone_ops"."<table>" ("Ambiguous
    reference to catalog or schema"), though a query or a table over it works. Reading the table
    through query_table('<relation>') binds the same table scan (filters and projections still
    pushed down) and is accepted in a view, whatever the file's name. Other adapters read the
    relation itself.
-#}
{% macro source_in_view(relation) -%}
    {{ return(adapter.dispatch('source_in_view', 'drone_ops')(relation)) }}
{%- endmacro %}

{% macro duckdb__source_in_view(relation) -%}
    query_table('{{ relation | replace("'", "''") }}')
{%- endmacro %}

{% macro default__source_in_view(relation) -%}
    {{ relation }}
{%- endmacro %}
