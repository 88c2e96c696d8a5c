{#- Grain check for composite keys (the dbt_utils test, which cannot be installed offline). -#}
{% test unique_combination_of_columns(model, combination_of_columns) %}
with
grouped as (
    select
        {{ combination_of_columns | join(', ') }},
        count(*) as n_rows
    from {{ model }}
    group by {{ combination_of_columns | join(', ') }}
)

select * from grouped where n_rows > 1
{% endtest %}
