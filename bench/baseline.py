"""The baseline: dlt's generic `rest_api` source, configured as a user would for our API.

Same endpoints as our sync: both project lists (default and `archived=true`, since a user who
wants every project needs both), jobs as a child of each list, job types, team, webhooks and
each webhook's delivery log (a child of the webhook list, `data_selector: logs`). Cursor
paginator, bearer auth. Every resource is written with `replace` and `primary_key: id`: the
plain full-snapshot choice, and the cheapest load for the baseline, so our ratios are
conservative (merge would add staging tables and a delete-insert per table).

`tuned=True` adds what dlt offers to make it fast: `parallelized=True` on the source and on the
child resources, `loader_file_format="parquet"` and 16 extract workers (`EXTRACT__WORKERS`, set
by the worker before dlt is imported).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TUNED_EXTRACT_WORKERS = 16
CHILD_RESOURCES = ("jobs", "archived_jobs", "webhook_logs")
CURSOR_PAGINATOR = {"type": "cursor", "cursor_path": "cursor", "cursor_param": "cursor"}


def rest_api_config(base_url: str, api_key: str, *, tuned: bool) -> dict[str, Any]:
    """The `RESTAPIConfig` a user would write for the Drone Operations API."""
    resources: list[dict[str, Any]] = [
        {"name": "projects", "endpoint": {"path": "projects", "data_selector": "projects"}},
        {
            "name": "archived_projects",
            "table_name": "projects",
            "endpoint": {
                "path": "projects",
                "params": {"archived": "true"},
                "data_selector": "projects",
            },
        },
        {
            "name": "jobs",
            "endpoint": {"path": "projects/{resources.projects.id}/jobs", "data_selector": "jobs"},
        },
        {
            "name": "archived_jobs",
            "table_name": "jobs",
            "endpoint": {
                "path": "projects/{resources.archived_projects.id}/jobs",
                "data_selector": "jobs",
            },
        },
        {"name": "job_types", "endpoint": {"path": "job-types", "data_selector": "job_types"}},
        {"name": "team", "endpoint": {"path": "team", "data_selector": "team"}},
        {"name": "webhooks", "endpoint": {"path": "webhooks", "data_selector": "webhooks"}},
        {
            "name": "webhook_logs",
            "include_from_parent": ["id"],
            "endpoint": {
                "path": "webhooks/{resources.webhooks.id}",
                "data_selector": "logs",
                # rest_api treats a path ending in a placeholder as a single entity and does not
                # paginate it unless the endpoint names its paginator
                "paginator": dict(CURSOR_PAGINATOR),
            },
        },
    ]
    if tuned:
        for resource in resources:
            if resource["name"] in CHILD_RESOURCES:
                resource["parallelized"] = True
    return {
        "client": {
            "base_url": f"{base_url.rstrip('/')}/v1/",
            "auth": {"type": "bearer", "token": api_key},
            "paginator": dict(CURSOR_PAGINATOR),
        },
        "resource_defaults": {"primary_key": "id", "write_disposition": "replace"},
        "resources": resources,
    }


def run_baseline(
    base_url: str, api_key: str, database: Path, pipelines_dir: Path, *, tuned: bool
) -> dict[str, Any]:
    """Runs one baseline sync into a fresh DuckDB file; returns rows loaded and step times."""
    import dlt
    from dlt.sources.rest_api import rest_api_source

    config: Any = rest_api_config(base_url, api_key, tuned=tuned)
    source = rest_api_source(config, name="rest_api_baseline", parallelized=tuned)
    pipeline = dlt.pipeline(
        pipeline_name="rest_api_baseline",
        destination=dlt.destinations.duckdb(credentials=str(database)),
        dataset_name="rest_api",
        pipelines_dir=str(pipelines_dir),
    )
    if tuned:
        pipeline.run(source, loader_file_format="parquet")
    else:
        pipeline.run(source)
    trace = pipeline.last_trace
    assert trace is not None
    counts = trace.last_normalize_info.row_counts if trace.last_normalize_info else {}
    rows = sum(n for table, n in counts.items() if not table.startswith("_dlt"))
    steps = {
        step.step: (step.finished_at - step.started_at).total_seconds()
        for step in trace.steps
        if step.finished_at is not None
    }
    return {"rows": rows, "row_counts": dict(counts), "steps": steps}
