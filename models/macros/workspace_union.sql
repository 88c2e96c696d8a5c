{#-
    A raw table of every workspace (macros/workspaces.sql) as one select, each row tagged with
    its workspace: `select '<name>' as workspace, * from <that workspace's table>`, joined with
    union all. Each staging model reads its raw table only through this.

    - The relations come from source('drone_ops', table) with the schema replaced, so dbt's
      lineage (and what reads it, e.g. Dagster's dbt integration) still sees one source per
      table; each part reads through source_in_view (the DuckDB catalog/schema clash).
    - A workspace whose table does not exist (listed in the var but not synced yet, or a run
      that loaded only some tables) is left out, looked up when the model runs, for every
      workspace in one catalog query (workspace_tables). Not through adapter.get_relation:
      dbt's relation cache marks a schema cached as its first relation is added, so a model
      built in another thread meanwhile could find the schema's table missing and leave a
      whole workspace out (dbt-labs/dbt-adapters#366); seen on PostgreSQL with 100
      workspaces. While dbt
      parses, `execute` is false and nothing is looked up: the parse only records the source.
      When no workspace has the table, the first workspace's relation is read anyway (with the
      var unset, the source relation itself), so the build fails as it did before workspaces:
      the table does not exist. Never another schema's table, which would belong to no
      workspace.
    - union all matches columns by position. The workspaces' tables are written by separate
      loads, so a column added in a later version of the sync can sit at another position, or
      be missing, in an older workspace's table. When the parts' columns differ, each part
      lists the union of the columns by name instead of `*`, a missing one as a typed null.
-#}
{% macro workspace_union(table) -%}
    {%- set source_relation = source('drone_ops', table) -%}
    {%- set parts = [] -%}
    {%- set listed = workspaces(source_relation.schema) -%}
    {%- set existing = workspace_tables(source_relation, listed) if execute else [] -%}
    {%- for workspace in listed -%}
        {%- set relation = source_relation.incorporate(path={'schema': workspace['schema']}) -%}
        {%- if not execute or workspace['schema'] | lower in existing -%}
            {%- do parts.append({'name': workspace['name'], 'relation': relation}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if parts | length == 0 -%}
        {%- set first = workspaces(source_relation.schema)[0] -%}
        {%- do parts.append({
            'name': first['name'],
            'relation': source_relation.incorporate(path={'schema': first['schema']}),
        }) -%}
    {%- endif -%}
    {%- set select_lists = workspace_union_select_lists(parts) -%}
    {#- the caller indents the first line; the rest is laid out as in a CTE of a model #}
    {%- for part in parts -%}
        {%- if not loop.first %}

    union all

    {% endif -%}
    select
        '{{ part.name }}' as workspace,
        {{ select_lists[loop.index0] | join(',\n        ') }}
    from {{ source_in_view(part.relation) }}
    {%- endfor -%}
{%- endmacro %}


{#- The schemas (lowercase) among the workspaces' in which the source's table exists. -#}
{% macro workspace_tables(source_relation, listed) -%}
    {%- set schemas = [] -%}
    {%- for workspace in listed -%}
        {%- do schemas.append("'" ~ (workspace['schema'] | lower | replace("'", "''")) ~ "'") -%}
    {%- endfor -%}
    {%- set query -%}
        select lower(table_schema) from information_schema.tables
        where lower(table_name) = '{{ source_relation.identifier | lower }}'
            and lower(table_schema) in ({{ schemas | join(', ') }})
            {%- if source_relation.database %}
            and lower(table_catalog) = '{{ source_relation.database | lower }}'
            {%- endif %}
    {%- endset -%}
    {{ return(run_query(query).columns[0].values() | list) }}
{%- endmacro %}
