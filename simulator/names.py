"""The names of the API's lists, in one place.

Each name is at once the JSON key a list page carries its rows under, the tag its cursors start
with, and a key of the admin counts, so the store, the request rules and the OpenAPI document
read them from here rather than spelling them again.
"""

from __future__ import annotations

PROJECTS = "projects"
JOBS = "jobs"
JOB_TYPES = "job_types"
TEAM = "team"
WEBHOOKS = "webhooks"
LOGS = "logs"

LISTS = (PROJECTS, JOBS, JOB_TYPES, TEAM, WEBHOOKS, LOGS)

# request paths, as Starlette route templates (the OpenAPI document writes them the same way)
PROJECTS_PATH = "/v1/projects"
PROJECT_PATH = PROJECTS_PATH + "/{projectId}"
ARCHIVE_PATH = PROJECT_PATH + "/archive"
JOBS_PATH = PROJECT_PATH + "/jobs"
JOB_PATH = JOBS_PATH + "/{jobId}"
ASSIGN_PATH = JOB_PATH + "/assign"
UNASSIGN_PATH = JOB_PATH + "/unassign"
JOB_TYPES_PATH = "/v1/job-types"
JOB_TYPE_PATH = JOB_TYPES_PATH + "/{jobTypeId}"
TEAM_PATH = "/v1/team"
MEMBER_PATH = TEAM_PATH + "/{teamMemberId}"
WEBHOOKS_PATH = "/v1/webhooks"
WEBHOOK_PATH = WEBHOOKS_PATH + "/{webhookId}"
OPENAPI_PATH = "/openapi.json"

# the admin API (mounted with --admin), which test and benchmark handles call
ADMIN_FAULTS_PATH = "/_admin/faults"
ADMIN_WAIT_PATH = "/_admin/deliveries/wait"
ADMIN_STATS_PATH = "/_admin/stats"
ADMIN_STATS_RESET_PATH = "/_admin/stats/reset"
ADMIN_CHURN_PATH = "/_admin/churn"
ADMIN_COUNTS_PATH = "/_admin/counts"
ADMIN_DELIVERIES_PATH = "/_admin/deliveries"
ADMIN_DELIVERIES_RESET_PATH = "/_admin/deliveries/reset"
ADMIN_DELIVERY_FAULTS_PATH = "/_admin/delivery-faults"
ADMIN_DELIVERY_RETRIES_PATH = "/_admin/delivery-retries"
ADMIN_WEBHOOK_SECRET_PATH = "/_admin/webhook-secret"
ADMIN_GATE_PATH = "/_admin/gate"
ADMIN_EDIT_PATH = "/_admin/edit"
