{#-
    `unique` for a fleet of workspaces: ids of different workspaces may collide (the same
    prj_1 in two workspaces is two projects), so a key is unique per (workspace, key). Nulls
    are left to the model's not-null check (not_null_columns), as dbt's own unique leaves
    them to not_null.
-#}
{% test unique_within_workspace(model, column_name) %}
with
grouped as (
    select
        workspace,
        {{ column_name }} as unique_field,
        count(*) as n_records
    from {{ model }}
    where {{ column_name }} is not null
    group by workspace, {{ column_name }}
)

select * from grouped where n_records > 1
{% endtest %}
