{#-
    One row per status interval of a job: the jobs' rows of int_status_intervals, which holds
    the logic and its unit tests, with job-named columns (macros/status_history.sql).
-#}

{{ status_history(ref('int_status_intervals'), 'job') }}
