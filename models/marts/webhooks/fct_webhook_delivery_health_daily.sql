with

deliveries as (
    select * from {{ ref('fct_webhook_deliveries') }}
),

daily as (
    select
        workspace,
        webhook_id,
        max(webhook_name) as webhook_name,
        delivery_date,
        cast(count(*) as {{ dbt.type_bigint() }}) as deliveries,
        cast(sum(case when is_success then 0 else 1 end) as {{ dbt.type_bigint() }}) as failures,
        {{ percentile_cont(0.5, 'duration_ms') }} as p50_duration_ms,
        {{ percentile_cont(0.95, 'duration_ms') }} as p95_duration_ms,
        max(duration_ms) as max_duration_ms
    from deliveries
    group by workspace, webhook_id, delivery_date
),

final as (
    select
        workspace,
        {{ dbt.concat(['webhook_id', "'#'", dbt.cast('delivery_date', dbt.type_string())]) }}
            as webhook_day_id,
        webhook_id,
        webhook_name,
        delivery_date,
        deliveries,
        deliveries - failures as successes,
        failures,
        cast(deliveries - failures as {{ type_double() }}) / deliveries as success_rate,
        p50_duration_ms,
        p95_duration_ms,
        max_duration_ms
    from daily
)

select * from final
