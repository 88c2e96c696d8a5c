{#-
    The rows of a history (scd2) table as they were at `at`: the version of each entity whose
    validity [valid_from, valid_to) holds `at`. Entities created later or retired (deleted) by
    then have no row. docs/as-of.md says what "as of" means: the load times, when the sync saw
    each version, not the API's `updated`.

    - `relation` is a raw table's name ('projects'): every workspace's raw table
      (workspace_union), with the raw columns and `_dlt_valid_from`/`_dlt_valid_to`;
      or a relation (ref('dim_project_versions')) with `valid_from`/`valid_to` columns.
      `valid_from`/`valid_to` name other validity columns.
    - `at` is SQL: a literal (`"timestamptz '2026-11-20 12:00:00+00'"`), a column or a
      parameter's name (the table functions of history_functions.sql pass theirs).

    The result is one select, for a CTE or a subquery: `with projects as ({{ as_of(...) }})`.
-#}
{% macro as_of(relation, at, valid_from=none, valid_to=none) -%}
    {%- set columns = history_validity(relation, valid_from, valid_to) -%}
    select * from {{ history_from(relation) }}
    where {{ columns[0] }} <= {{ at }}
        and ({{ columns[1] }} is null or {{ columns[1] }} > {{ at }})
{%- endmacro %}
