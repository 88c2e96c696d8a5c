{#-
    Expands each current job's recurrence rule into dated occurrences, exactly as
    docs/occurrence-rules.md defines them (the simulator implements the same rules).
    Each row also carries its job's project and current status, so calendar questions ("open
    flights per project next week") need no join to dim_jobs.
    Periods are generated per job with a lateral series bounded by the job's window, so the
    cost is proportional to the occurrences produced, not to jobs x days.
-#}

{%- set horizon_days = var('occurrence_horizon_days', 365) | int -%}

with

jobs as (
    select * from {{ ref('int_jobs_current') }}
),

projects as (
    select * from {{ ref('int_projects_current') }}
),

days_of_week as (
    select * from {{ ref('int_job_selected_days_of_week') }}
),

weeks_of_month as (
    select * from {{ ref('int_job_weeks_of_month') }}
),

rules as (
    select
        workspace,
        job_id,
        project_id,
        start_date,
        case
            when job_pattern is null or job_pattern <> 'recurring' then 'one_time'
            when recurring_frequency is null then 'one_time'
            when recurring_frequency in {{ quoted_list(var("recurring_frequencies")) }}
                then recurring_frequency
            else 'one_time'
        end as occurrence_rule,
        case when recurring_interval >= 1 then recurring_interval else 1 end as step,
        coalesce(end_date, {{ add_days('start_date', horizon_days - 1) }}) as window_end,
        {{ day_of_week('start_date') }} as start_weekday,
        {{ day_of_month('start_date') }} as start_day_of_month,
        cast({{ dbt.date_trunc('month', 'start_date') }} as date) as start_month,
        week_of_month
    from jobs
),

-- weekday(s) per job: selected_days_of_week, else start_date's weekday
job_weekdays as (
    select
        rules.workspace,
        rules.job_id,
        coalesce(days_of_week.day_of_week, rules.start_weekday) as day_of_week
    from rules
    left join days_of_week
        on
            rules.workspace = days_of_week.workspace
            and rules.job_id = days_of_week.job_id
),

-- week(s) of month per monthly job: weeks_of_month, else [week_of_month]
job_weeks as (
    select
        workspace,
        job_id,
        week_of_month
    from weeks_of_month

    union all

    select
        rules.workspace,
        rules.job_id,
        rules.week_of_month
    from rules
    where
        rules.occurrence_rule = 'monthly'
        and rules.week_of_month is not null
        and not exists (
            select 1 from weeks_of_month
            where
                weeks_of_month.workspace = rules.workspace
                and weeks_of_month.job_id = rules.job_id
        )
),

single_occurrences as (
    select
        workspace,
        job_id,
        case when occurrence_rule = 'one_time' then start_date end as occurrence_date
    from rules
    where occurrence_rule in ('one_time', 'flexible')
),

daily as (
    select
        rules.workspace,
        rules.job_id,
        {{ add_days('rules.start_date', 'series.day_offset') }} as occurrence_date
    from rules
    {{ lateral_int_series(
        '0',
        dbt.datediff('rules.start_date', 'rules.window_end', 'day'),
        'rules.step',
        'series',
        'day_offset',
    ) }}
    where rules.occurrence_rule = 'daily'
),

weekly_periods as (
    select
        rules.workspace,
        rules.job_id,
        rules.start_date,
        rules.window_end,
        rules.step,
        {{ add_days('rules.start_date', '-rules.start_weekday') }} as week0
    from rules
    where rules.occurrence_rule = 'weekly'
),

weekly as (
    select
        weekly_periods.workspace,
        weekly_periods.job_id,
        {{ add_days('weekly_periods.week0', 'series.day_offset + job_weekdays.day_of_week') }}
            as occurrence_date
    from weekly_periods
    {{ lateral_int_series(
        '0',
        dbt.datediff('weekly_periods.week0', 'weekly_periods.window_end', 'day'),
        '7 * weekly_periods.step',
        'series',
        'day_offset',
    ) }}
    inner join job_weekdays
        on
            weekly_periods.workspace = job_weekdays.workspace
            and weekly_periods.job_id = job_weekdays.job_id
),

-- month starts of the periods of monthly (step N months) and yearly (step 12N) jobs
month_periods as (
    select
        rules.workspace,
        rules.job_id,
        rules.occurrence_rule,
        rules.start_day_of_month,
        cast({{ dbt.dateadd('month', 'series.month_offset', 'rules.start_month') }} as date)
            as month_start
    from rules
    {{ lateral_int_series('0', dbt.datediff('rules.start_month', 'rules.window_end', 'month'),
        "case when rules.occurrence_rule = 'yearly' then 12 * rules.step else rules.step end",
        'series', 'month_offset') }}
    where rules.occurrence_rule in ('monthly', 'yearly')
),

month_bounds as (
    select
        workspace,
        job_id,
        occurrence_rule,
        start_day_of_month,
        month_start,
        cast({{ dbt.last_day('month_start', 'month') }} as date) as month_end
    from month_periods
),

-- monthly without weeks, and yearly: start_date's day of month, clamped to the month's end
day_of_month_dates as (
    select
        month_bounds.workspace,
        month_bounds.job_id,
        {{ add_days('month_bounds.month_start',
            'least(month_bounds.start_day_of_month, ' ~ day_of_month('month_bounds.month_end') ~ ') - 1') }}
            as occurrence_date
    from month_bounds
    where
        month_bounds.occurrence_rule = 'yearly'
        or not exists (
            select 1 from job_weeks
            where
                job_weeks.workspace = month_bounds.workspace
                and job_weeks.job_id = month_bounds.job_id
        )
),

-- monthly with weeks: the q-th weekday w of the month, q = -1 being the last one
nth_weekday_dates as (
    select
        month_bounds.workspace,
        month_bounds.job_id,
        month_bounds.month_start,
        month_bounds.month_end,
        case
            when job_weeks.week_of_month = -1
                then {{ add_days(
                    'month_bounds.month_end',
                    '-mod(' ~ day_of_week('month_bounds.month_end')
                    ~ ' - job_weekdays.day_of_week + 7, 7)',
                ) }}
            else {{ add_days(
                'month_bounds.month_start',
                'mod(job_weekdays.day_of_week - ' ~ day_of_week('month_bounds.month_start')
                ~ ' + 7, 7) + 7 * (job_weeks.week_of_month - 1)',
            ) }}
        end as occurrence_date
    from month_bounds
    inner join job_weeks
        on
            month_bounds.workspace = job_weeks.workspace
            and month_bounds.job_id = job_weeks.job_id
    inner join job_weekdays
        on
            month_bounds.workspace = job_weekdays.workspace
            and month_bounds.job_id = job_weekdays.job_id
    where month_bounds.occurrence_rule = 'monthly'
),

recurring_dates as (
    select
        workspace,
        job_id,
        occurrence_date
    from daily

    union all

    select
        workspace,
        job_id,
        occurrence_date
    from weekly

    union all

    select
        workspace,
        job_id,
        occurrence_date
    from day_of_month_dates

    union all

    select
        workspace,
        job_id,
        occurrence_date
    from nth_weekday_dates
    where occurrence_date between month_start and month_end
),

in_window as (
    select distinct
        recurring_dates.workspace,
        recurring_dates.job_id,
        recurring_dates.occurrence_date
    from recurring_dates
    inner join rules
        on
            recurring_dates.workspace = rules.workspace
            and recurring_dates.job_id = rules.job_id
    where recurring_dates.occurrence_date between rules.start_date and rules.window_end
),

all_occurrences as (
    select
        workspace,
        job_id,
        occurrence_date
    from in_window

    union all

    select
        workspace,
        job_id,
        occurrence_date
    from single_occurrences
),

numbered as (
    select
        workspace,
        job_id,
        occurrence_date,
        row_number() over (
            partition by workspace, job_id order by occurrence_date
        ) as occurrence_number
    from all_occurrences
),

final as (
    select
        numbered.workspace,
        {{ dbt.concat([
            'numbered.job_id',
            "'#'",
            dbt.cast('numbered.occurrence_number', dbt.type_string()),
        ]) }} as job_occurrence_id,
        numbered.job_id,
        numbered.occurrence_number,
        numbered.occurrence_date,
        rules.project_id,
        projects.name as project_name,
        jobs.status as job_status,
        jobs.status not in {{ quoted_list(closed_statuses()) }} as is_job_open,
        rules.occurrence_rule
    from numbered
    inner join rules
        on
            numbered.workspace = rules.workspace
            and numbered.job_id = rules.job_id
    inner join jobs
        on
            numbered.workspace = jobs.workspace
            and numbered.job_id = jobs.job_id
    left join projects
        on
            rules.workspace = projects.workspace
            and rules.project_id = projects.project_id
)

select * from final
