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
