{#-
    One row per status interval of a project: the projects' rows of int_status_intervals, which holds
    the logic and its unit tests, with project-named columns (macros/status_history.sql).
-#}

{{ status_history(ref('int_status_intervals'), 'project') }}
