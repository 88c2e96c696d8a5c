{#-
    The gap report (docs/events.md): per workspace, webhook and UTC day, the events the API
    logged delivering and whether the receiver got them, matched on delivery_id (the same on
    every retry of one event). Only webhooks that delivered at least one event the receiver got
    are reported, so a webhook pointing at another system is not a gap. Events the receiver got
    that no synced log entry shows yet (the logs arrive with the next batch run) are counted on
    the day they were received, under webhook_id null.
-#}
with

logged_attempts as (
    select * from {{ ref('stg_drone_ops__webhook_deliveries') }}
    where delivery_id is not null
),

received as (
    select * from {{ ref('stg_drone_ops__webhook_events') }}
),

logged as (
    select
        workspace,
        webhook_id,
        delivery_id,
        min(created_at) as first_attempt_at,
        max(case when status = 'success' then 1 else 0 end) as was_delivered
    from logged_attempts
    group by workspace, webhook_id, delivery_id
),

listened_webhooks as (
    select distinct
        logged.workspace,
        logged.webhook_id
    from logged
    inner join received
        on
            logged.workspace = received.workspace
            and logged.delivery_id = received.delivery_id
),

logged_daily as (
    select
        logged.workspace,
        logged.webhook_id,
        {{ utc_date('logged.first_attempt_at') }} as event_date,
        count(*) as events_logged,
        sum(logged.was_delivered) as events_logged_delivered,
        sum(case when received.delivery_id is null then 0 else 1 end) as events_received,
        sum(case when received.delivery_id is null then 1 else 0 end) as events_missed
    from logged
    inner join listened_webhooks
        on
            logged.workspace = listened_webhooks.workspace
            and logged.webhook_id = listened_webhooks.webhook_id
    left join received
        on
            logged.workspace = received.workspace
            and logged.delivery_id = received.delivery_id
    group by logged.workspace, logged.webhook_id, {{ utc_date('logged.first_attempt_at') }}
),

unlogged_daily as (
    select
        received.workspace,
        {{ utc_date('received.received_at') }} as event_date,
        count(*) as events_unlogged
    from received
    where
        not exists (
            select 1
            from logged
            where
                logged.workspace = received.workspace
                and logged.delivery_id = received.delivery_id
        )
    group by received.workspace, {{ utc_date('received.received_at') }}
),

final as (
    select
        workspace,
        webhook_id,
        event_date,
        cast(events_logged as {{ dbt.type_bigint() }}) as events_logged,
        cast(events_logged_delivered as {{ dbt.type_bigint() }}) as events_logged_delivered,
        cast(events_received as {{ dbt.type_bigint() }}) as events_received,
        cast(events_missed as {{ dbt.type_bigint() }}) as events_missed,
        cast(0 as {{ dbt.type_bigint() }}) as events_unlogged
    from logged_daily
    union all
    select
        workspace,
        cast(null as {{ dbt.type_string() }}) as webhook_id,
        event_date,
        cast(0 as {{ dbt.type_bigint() }}) as events_logged,
        cast(0 as {{ dbt.type_bigint() }}) as events_logged_delivered,
        cast(0 as {{ dbt.type_bigint() }}) as events_received,
        cast(0 as {{ dbt.type_bigint() }}) as events_missed,
        cast(events_unlogged as {{ dbt.type_bigint() }}) as events_unlogged
    from unlogged_daily
)

select * from final
