{#-
    A model's row checks in one test: its not-null columns, its value lists, its keys and its
    grain, one dbt node per model instead of one per check (dbt costs about 24 ms of CPU per
    node whatever the rows; docs/models.md, "How the data is checked").

    - not_null: columns that may never be null;
    - accepted: column -> its allowed values (nulls pass, as in dbt's accepted_values; strings
      are quoted, numbers and booleans are not);
    - unique: a column name is a key unique within a workspace (nulls left to not_null, as
      dbt's unique leaves them); a list of columns is a grain, their combination unique
      (nulls included, as dbt_utils' unique_combination_of_columns).

    The test returns one row per broken check (`check_name`, `column_name`, `failing_rows`):
    rows with a null, rows with a value not in the list, or key values held by more than one
    row. So its failing rows say what is wrong where, and `drone-sync` puts them in the
    failure's message.
-#}
{% test model_checks(model, not_null=[], accepted={}, unique=[]) %}
{%- if not (not_null or accepted or unique) %}
    {{ exceptions.raise_compiler_error("model_checks needs at least one check") }}
{%- endif %}
{%- set counts = [] %}
{%- for column in not_null %}
    {%- do counts.append(("not_null", column, "count(*) - count(" ~ column ~ ")")) %}
{%- endfor %}
{%- for column, values in accepted.items() %}
    {%- set listed = [] %}
    {%- for value in values %}
        {%- do listed.append("'" ~ value ~ "'" if value is string else value | string) %}
    {%- endfor %}
    {%- set outside = column ~ " is not null and " ~ column ~ " not in (" ~ listed | join(", ") ~ ")" %}
    {%- do counts.append(("accepted", column, "sum(case when " ~ outside ~ " then 1 else 0 end)")) %}
{%- endfor %}
with
{%- if counts %}
counted as (
    select
    {%- for kind, column, count in counts %}
        {{ count }} as {{ kind }}_{{ loop.index }}{{ "," if not loop.last }}
    {%- endfor %}
    from {{ model }}
),
{%- endif %}

broken as (
{%- for kind, column, count in counts %}
    select
        '{{ kind }}' as check_name,
        '{{ column }}' as column_name,
        cast({{ kind }}_{{ loop.index }} as {{ dbt.type_bigint() }}) as failing_rows
    from counted
    {{- "\n    union all" if not loop.last or unique }}
{%- endfor %}
{%- for key in unique %}
    {%- set columns = [key] if key is string else key %}
    select
        '{{ "unique" if key is string else "grain" }}' as check_name,
        '{{ columns | join(" + ") }}' as column_name,
        count(*) as failing_rows
    from (
        select {{ columns[0] }}
        from {{ model }}
        {%- if key is string %}
        where {{ key }} is not null
        group by workspace, {{ key }}
        {%- else %}
        group by {{ columns | join(", ") }}
        {%- endif %}
        having count(*) > 1
    ) as duplicated
    {{- "\n    union all" if not loop.last }}
{%- endfor %}
)

select
    check_name,
    column_name,
    failing_rows
from broken
where failing_rows > 0
{% endtest %}
