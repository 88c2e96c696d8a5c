{#- 8-byte float in DuckDB and PostgreSQL (dbt.type_float() is a 4-byte float on DuckDB). -#}
{% macro type_double() -%}
    double precision
{%- endmacro %}
