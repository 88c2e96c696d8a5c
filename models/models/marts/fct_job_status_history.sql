{#- One row per status interval of a job (see macros/status_intervals.sql). -#}

{{ status_intervals(ref('stg_drone_ops__job_versions'), 'job_id') }}
