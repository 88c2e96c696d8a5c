{#- The UTC calendar date of a timestamp with time zone, whatever the session time zone. -#}
{% macro utc_date(timestamp_expr) -%}
    cast(({{ timestamp_expr }} at time zone 'UTC') as date)
{%- endmacro %}
