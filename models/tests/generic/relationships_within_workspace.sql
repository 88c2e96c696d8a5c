{#-
    `relationships` for a fleet of workspaces: a reference points at a row of the same
    workspace (ids of different workspaces may collide), so a child value must exist in `to`
    with the same workspace. Nulls pass, as in dbt's own relationships.
-#}
{% test relationships_within_workspace(model, column_name, to, field) %}
with
child as (
    select
        workspace,
        {{ column_name }} as from_field
    from {{ model }}
    where {{ column_name }} is not null
),

parent as (
    select
        workspace,
        {{ field }} as to_field
    from {{ to }}
)

select
    child.workspace,
    child.from_field
from child
left join parent
    on
        child.workspace = parent.workspace
        and child.from_field = parent.to_field
where parent.to_field is null
{% endtest %}
