with

parent as (
    select * from {{ ref('stg_drone_ops__webhooks') }}
    where event_types is not null
),

unnested as (
    select
        workspace,
        webhook_id,
        {{ json_array_elements_text('event_types') }} as element
    from parent
),

typed as (
    select
        workspace,
        webhook_id,
        element as event_type
    from unnested
)

select * from typed
