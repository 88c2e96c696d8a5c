{#-
    The few expressions where DuckDB and PostgreSQL differ, behind adapter.dispatch, so the
    models run unchanged on both. Everything else uses dbt's own cross-database macros.
-#}

{#- Elements of a JSON array column as text, one row each; used in a select list. -#}
{% macro json_array_elements_text(column) -%}
    {{ return(adapter.dispatch('json_array_elements_text', 'drone_ops')(column)) }}
{%- endmacro %}

{% macro duckdb__json_array_elements_text(column) -%}
    unnest(from_json({{ column }}, '["VARCHAR"]'))
{%- endmacro %}

{% macro default__json_array_elements_text(column) -%}
    jsonb_array_elements_text(
        case
            when jsonb_typeof(cast({{ column }} as jsonb)) = 'array' then cast({{ column }} as jsonb)
            else cast('[]' as jsonb)
        end
    )
{%- endmacro %}

{#- Weekday of a date, 0 = Sunday ... 6 = Saturday (the API's convention). -#}
{% macro day_of_week(date_expr) -%}
    {{ return(adapter.dispatch('day_of_week', 'drone_ops')(date_expr)) }}
{%- endmacro %}

{% macro duckdb__day_of_week(date_expr) -%}
    cast(dayofweek({{ date_expr }}) as integer)
{%- endmacro %}

{% macro default__day_of_week(date_expr) -%}
    cast(extract(dow from {{ date_expr }}) as integer)
{%- endmacro %}

{#- Day of the month of a date, as an integer. -#}
{% macro day_of_month(date_expr) -%}
    cast(extract(day from {{ date_expr }}) as integer)
{%- endmacro %}

{#-
    Date plus a whole number of days (an integer expression), as a date. DuckDB and PostgreSQL
    both add an integer to a date directly, which is much cheaper than interval arithmetic on
    the millions of rows of the occurrence calendar; other adapters use dbt.dateadd.
-#}
{% macro add_days(date_expr, days_expr) -%}
    {{ return(adapter.dispatch('add_days', 'drone_ops')(date_expr, days_expr)) }}
{%- endmacro %}

{% macro duckdb__add_days(date_expr, days_expr) -%}
    ({{ date_expr }} + cast({{ days_expr }} as integer))
{%- endmacro %}

{% macro postgres__add_days(date_expr, days_expr) -%}
    ({{ date_expr }} + cast({{ days_expr }} as integer))
{%- endmacro %}

{% macro default__add_days(date_expr, days_expr) -%}
    cast({{ dbt.dateadd('day', days_expr, date_expr) }} as date)
{%- endmacro %}

{#- Exact seconds between two timestamps (fractions kept), as a double. -#}
{% macro seconds_between(start_expr, end_expr) -%}
    {{ return(adapter.dispatch('seconds_between', 'drone_ops')(start_expr, end_expr)) }}
{%- endmacro %}

{% macro default__seconds_between(start_expr, end_expr) -%}
    cast(extract(epoch from ({{ end_expr }} - {{ start_expr }})) as {{ type_double() }})
{%- endmacro %}

{#- The UTC calendar date of a timestamp with time zone, whatever the session time zone. -#}
{% macro utc_date(timestamp_expr) -%}
    cast(({{ timestamp_expr }} at time zone 'UTC') as date)
{%- endmacro %}

{#- Continuous percentile; the ordered-set syntax works in DuckDB and PostgreSQL alike. -#}
{% macro percentile_cont(fraction, column) -%}
    {{ return(adapter.dispatch('percentile_cont', 'drone_ops')(fraction, column)) }}
{%- endmacro %}

{% macro default__percentile_cont(fraction, column) -%}
    percentile_cont({{ fraction }}) within group (order by {{ column }})
{%- endmacro %}

{#-
    A lateral integer series start..stop by step, aliased alias(column_name); joined per row so
    only the periods inside each job's window are generated.
-#}
{% macro lateral_int_series(start_expr, stop_expr, step_expr, alias, column_name) -%}
    {{ return(adapter.dispatch('lateral_int_series', 'drone_ops')(start_expr, stop_expr, step_expr, alias, column_name)) }}
{%- endmacro %}

{% macro default__lateral_int_series(start_expr, stop_expr, step_expr, alias, column_name) -%}
    cross join lateral generate_series(
        cast({{ start_expr }} as bigint), cast({{ stop_expr }} as bigint), cast({{ step_expr }} as bigint)
    ) as {{ alias }}({{ column_name }})
{%- endmacro %}

{#- Statuses shared by projects and jobs (API part 3.1). -#}
{% macro statuses() -%}
    {{ return(['draft', 'not_started', 'planned', 'in_progress', 'completed', 'on_hold',
               'weather_delayed', 'technical_issues', 'cancelled', 'aborted', 'other']) }}
{%- endmacro %}

{#- Statuses after which no more flying is planned; every other status counts as open. -#}
{% macro closed_statuses() -%}
    {{ return(['completed', 'cancelled', 'aborted']) }}
{%- endmacro %}

{#- 8-byte float in DuckDB and PostgreSQL (dbt.type_float() is a 4-byte float on DuckDB). -#}
{% macro type_double() -%}
    double precision
{%- endmacro %}

{#-
    Materialization of the staging models that read raw tables. Views, except where DuckDB
    refuses them: when the database file's catalog has the dataset's name (drone_ops.duckdb
    holding schema drone_ops, the default), DuckDB 2.0 rejects a view over
    "drone_ops"."drone_ops"."<table>" as an ambiguous reference, while a table over the same
    select works. There the staging models are tables, rebuilt on every run.
-#}
{% macro source_staging_materialization() -%}
    {%- if target.type == 'duckdb' and target.database == target.schema -%}
        {{ return('table') }}
    {%- else -%}
        {{ return('view') }}
    {%- endif -%}
{%- endmacro %}
