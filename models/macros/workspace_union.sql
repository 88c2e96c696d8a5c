{#-
    A raw table of every workspace (macros/workspaces.sql) as one select, each row tagged with
    its workspace: `select '<name>' as workspace, * from <that workspace's table>`, joined with
    union all. Each staging model reads its raw table only through this.

    - The relations come from source('drone_ops', table) with the schema replaced, so dbt's
      lineage (and what reads it, e.g. Dagster's dbt integration) still sees one source per
      table; each part reads through source_in_view (the DuckDB catalog/schema clash).
    - A workspace whose table does not exist (listed in the var but not synced yet, or a run
      that loaded only some tables) is left out, looked up when the model runs. While dbt
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
    {%- for workspace in workspaces(source_relation.schema) -%}
        {%- set relation = source_relation.incorporate(path={'schema': workspace['schema']}) -%}
        {%- if not execute or adapter.get_relation(
            database=relation.database, schema=relation.schema, identifier=relation.identifier
        ) is not none -%}
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
