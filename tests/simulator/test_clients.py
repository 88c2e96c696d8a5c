"""Clients no one here wrote: schemathesis against the served OpenAPI document, and dlt's
generic rest_api source loading projects, jobs (child of projects), job types and team."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from testkit.simulator_process import running_simulator

from .helpers import walk

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_openapi_document_is_served() -> None:
    with running_simulator() as h, h.client(full=False) as c:
        doc = c.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    assert ("GET", "/v1/projects") in ops and (
        "POST",
        "/v1/projects/{projectId}/jobs/{jobId}/assign",
    ) in ops
    assert len(ops) == 23


# The CI budget: every phase and every check, far fewer examples than the full run documented in
# docs/api-assumptions.md (200 per operation), which takes about two minutes on its own.
SCHEMATHESIS_EXAMPLES = 12


def test_schemathesis_all_phases_and_checks_find_no_failure(tmp_path: Path) -> None:
    st = Path(sys.executable).with_name("schemathesis")
    with running_simulator(seed=42, scale="tiny") as h:
        cmd = [
            str(st),
            "run",
            h.base_url + "/openapi.json",
            "-H",
            f"Authorization: Bearer {h.full_key}",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            str(SCHEMATHESIS_EXAMPLES),
            "--generation-deterministic",
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--no-color",
        ]
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO_ROOT),
            "SCHEMATHESIS_HOOKS": "tests.simulator.schemathesis_hooks",
            "SIMULATOR_BASE_URL": h.base_url,
            "SIMULATOR_KEY": h.full_key,
        }
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env, check=False
        )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅  {phase}" in result.stdout, result.stdout[-4000:]
    assert re.search(r"(\d+) generated, \1 passed", result.stdout), result.stdout[-4000:]


def test_dlt_rest_api_source_loads_what_the_simulator_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dlt
    from dlt.sources.rest_api import RESTAPIConfig, rest_api_source

    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")
    monkeypatch.chdir(tmp_path)
    with running_simulator(seed=8, scale="small") as h:
        with h.client(full=False) as c:
            projects = walk(c, "/v1/projects", "projects")
            jobs = sum(len(walk(c, f"/v1/projects/{p['id']}/jobs", "jobs")) for p in projects)
            job_types = len(walk(c, "/v1/job-types", "job_types"))
            team = len(walk(c, "/v1/team", "team"))
        config: RESTAPIConfig = {
            "client": {
                "base_url": h.base_url + "/v1/",
                "auth": {"type": "bearer", "token": h.read_key},
                "paginator": {"type": "cursor", "cursor_path": "cursor", "cursor_param": "cursor"},
            },
            "resource_defaults": {"write_disposition": "replace"},
            "resources": [
                {"name": "projects", "endpoint": {"path": "projects", "data_selector": "projects"}},
                {
                    "name": "jobs",
                    "endpoint": {
                        "path": "projects/{project_id}/jobs",
                        "data_selector": "jobs",
                        "params": {
                            "project_id": {"type": "resolve", "resource": "projects", "field": "id"}
                        },
                    },
                },
                {
                    "name": "job_types",
                    "endpoint": {"path": "job-types", "data_selector": "job_types"},
                },
                {"name": "team", "endpoint": {"path": "team", "data_selector": "team"}},
            ],
        }
        db = tmp_path / "warehouse.duckdb"
        pipeline = dlt.pipeline(
            pipeline_name="sim_rest_api",
            destination=dlt.destinations.duckdb(str(db)),
            dataset_name="sim",
            pipelines_dir=str(tmp_path / "pipelines"),
        )
        pipeline.run(rest_api_source(config))
    with duckdb.connect(str(db), read_only=True) as con:

        def count(table: str) -> int:
            row = con.execute(f"select count(*) from sim.{table}").fetchone()
            assert row is not None
            return int(row[0])

        assert count("projects") == len(projects) > 50
        assert count("jobs") == jobs > 300
        assert count("job_types") == job_types
        assert count("team") == team == 25
