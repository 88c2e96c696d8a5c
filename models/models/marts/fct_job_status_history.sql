{{ config(materialized='table') }}

{#- One row per status interval of a job (see macros/status_intervals.sql). -#}

{{ status_intervals(ref('stg_job_versions'), 'job_id') }}
