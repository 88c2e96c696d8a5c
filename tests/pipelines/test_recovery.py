"""A dlt working folder that dlt cannot read no longer wedges every later run.

The chaos suite once found, after a SIGINT during an extract, a stored schema without dlt's
`_dlt_version` table: the next run failed in `dlt.pipeline(...)` before it started, and so
would every run after it. Here that damage is written by hand, then the next run must set
the folder aside, start from the warehouse and leave it equal to the API, with no duplicates.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import dlt
import duckdb
import pytest
from dlt.common.schema.utils import generate_version_hash

from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.recovery import DAMAGED_SUFFIX, finish_pending
from drone_ops_sync.pipelines.run.run_trace import RunLoads
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config

from .test_sync_e2e import assert_equals_api, row_counts

pytestmark = pytest.mark.e2e


def _damage_schema(target: Target) -> None:
    """The damage the chaos suite found: a schema file without dlt's version table."""
    schema_file = target.working_dir() / "schemas" / "drone_ops.schema.json"
    stored = json.loads(schema_file.read_text(encoding="utf-8"))
    del stored["tables"]["_dlt_version"]
    # dlt wrote the damaged file itself, so its hash matched its content
    stored["version_hash"] = generate_version_hash(stored)
    schema_file.write_text(json.dumps(stored), encoding="utf-8")


def test_unreadable_working_folder_is_set_aside_and_the_run_heals(
    tiny_sim: Any, target: Target
) -> None:
    overrides = {"base_url": tiny_sim.base_url, "api_key": tiny_sim.read_key}
    assert run_sync(target, config=read_source_config(overrides)).ok
    tiny_sim.churn(seed=5, update_fraction=0.1, delete_fraction=0.02, new_deliveries_per_webhook=3)
    _damage_schema(target)

    healed = run_sync(target, config=read_source_config(overrides))

    assert healed.ok, healed.notes
    assert any("set aside dlt's working folder" in note for note in healed.notes), healed.notes
    aside = target.resolved_pipelines_dir() / f"{target.pipeline_name()}{DAMAGED_SUFFIX}"
    assert (aside / "schemas" / "drone_ops.schema.json").is_file()
    assert_equals_api(tiny_sim, target)
    counts = row_counts(target)

    again = run_sync(target, config=read_source_config(overrides))

    assert again.ok
    assert not any("set aside" in note for note in again.notes), again.notes
    assert row_counts(target) == counts, "the run after the repair finds nothing to change"


def test_dropped_pending_data_is_told_in_words_with_the_os_error_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A normalize killed mid-move leaves a package both extracted and normalized; finishing
    it fails in a rename (`[Errno 39] Directory not empty`). The warning and the note say what
    was found, what was done and that the data is re-derived, without the raw OS error, which
    stays at DEBUG."""
    pipeline = dlt.pipeline(
        pipeline_name="damaged",
        pipelines_dir=str(tmp_path / "pipelines"),
        destination=dlt.destinations.duckdb(str(tmp_path / "w.duckdb")),
        dataset_name="damaged",
    )
    pipeline.extract([{"id": 1}], table_name="things")
    working = Path(pipeline.working_dir)
    [package] = (working / "normalize" / "extracted").iterdir()
    shutil.copytree(package, tmp_path / "extracted")
    pipeline.normalize()
    shutil.copytree(tmp_path / "extracted", package)  # as if the move had not happened yet

    with caplog.at_level(logging.DEBUG, logger="drone_ops_sync.pipelines.run.recovery"):
        note = finish_pending(pipeline)

    ours = [r for r in caplog.records if r.name == "drone_ops_sync.pipelines.run.recovery"]
    warnings = [r.getMessage() for r in ours if r.levelno >= logging.WARNING]
    assert note is not None and warnings == [note]
    assert "found 1 load package an interrupted run left unloaded" in note
    assert "half-moved" in note and "dropped it" in note
    assert "re-derives its changes" in note
    for raw in ("Errno", "OSError", "Directory not empty", str(working)):
        assert raw not in note
    debug = [r.getMessage() for r in ours if r.levelno == logging.DEBUG]
    assert any("[Errno 39] Directory not empty" in message for message in debug), debug
    assert not pipeline.has_pending_data


def test_a_load_after_a_failed_one_loads_both_the_pending_package_and_its_own_data(
    target: Target,
) -> None:
    """A package a failed load of the same run left pending is loaded first, and the load's
    own data after it: dlt's `pipeline.run` would load the pending package and return without
    extracting the data it was given."""
    pipeline = make_pipeline(target)
    loads = RunLoads(target, pipeline)
    loads.run(dlt.resource([{"id": "first"}], name="loaded_before"))
    pipeline.extract([{"id": "left"}], table_name="left_pending")
    pipeline.normalize()  # the load step of this package failed
    assert pipeline.has_pending_data

    loads.run(dlt.resource([{"id": "new"}], name="loaded_after"))

    assert not pipeline.has_pending_data
    with duckdb.connect(str(target.resolved_database()), read_only=True) as warehouse:
        loaded = (("loaded_before", "first"), ("left_pending", "left"), ("loaded_after", "new"))
        for table, expected in loaded:
            rows = warehouse.sql(f"SELECT id FROM {target.dataset}.{table}").fetchall()
            assert rows == [(expected,)], table
    assert loads.save_trace(), "the run's trace names the packages it loaded"
