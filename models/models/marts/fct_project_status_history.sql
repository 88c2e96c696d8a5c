{#- One row per status interval of a project (see macros/status_intervals.sql). -#}

{{ status_intervals(ref('stg_drone_ops__project_versions'), 'project_id') }}
