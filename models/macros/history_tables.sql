{#-
    The history (scd2) tables that get table functions: the raw table's name (the functions'
    prefix: projects_as_of, projects_changed), its versions mart and the mart's key.
-#}
{% macro history_tables() -%}
    {{ return([
        {'table': 'projects', 'model': 'dim_project_versions', 'key': ['workspace', 'project_id']},
        {'table': 'jobs', 'model': 'dim_job_versions', 'key': ['workspace', 'job_id']},
        {'table': 'job_types', 'model': 'dim_job_type_versions', 'key': ['workspace', 'job_type_id']},
        {'table': 'team_members', 'model': 'dim_team_member_versions', 'key': ['workspace', 'team_member_id']},
        {'table': 'webhooks', 'model': 'dim_webhook_versions', 'key': ['workspace', 'webhook_id']},
    ]) }}
{%- endmacro %}
