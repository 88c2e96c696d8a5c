{#-
    The workspaces whose raw tables the models read: var `workspaces`, a list of
    {"name": ..., "schema": ...} that the sync passes with --vars, one entry per workspace of
    the fleet, each workspace's raw tables in a schema of its own. Unset, it is one workspace,
    `default`, in `default_schema` (the schema of the drone_ops source, <dataset>): a
    single-workspace warehouse builds as it always did, with workspace = 'default'.
    A name is written into the SQL as a literal and is half of every key in the models, so it
    is checked here: [a-z][a-z0-9_]*, each name once, each with a schema.
-#}
{% macro workspaces(default_schema) -%}
    {%- set configured = var('workspaces', none) -%}
    {%- if configured is none -%}
        {{ return([{'name': 'default', 'schema': default_schema}]) }}
    {%- endif -%}
    {%- if configured is string or configured is mapping or configured is not iterable
        or configured | length == 0 -%}
        {{ exceptions.raise_compiler_error(
            'var workspaces: a non-empty list of {"name": ..., "schema": ...} expected, got '
            ~ configured
        ) }}
    {%- endif -%}
    {%- set seen = [] -%}
    {%- for workspace in configured -%}
        {%- if workspace is not mapping
            or workspace.get('name') is not string
            or not modules.re.fullmatch('[a-z][a-z0-9_]*', workspace.get('name'))
            or workspace.get('schema') is not string
            or workspace.get('schema') | length == 0 -%}
            {{ exceptions.raise_compiler_error(
                'var workspaces: each entry needs a name matching [a-z][a-z0-9_]* and a schema,'
                ~ ' got ' ~ workspace
            ) }}
        {%- endif -%}
        {%- if workspace['name'] in seen -%}
            {{ exceptions.raise_compiler_error(
                'var workspaces: workspace ' ~ workspace['name'] ~ ' is listed twice'
            ) }}
        {%- endif -%}
        {%- do seen.append(workspace['name']) -%}
    {%- endfor -%}
    {{ return(configured) }}
{%- endmacro %}
