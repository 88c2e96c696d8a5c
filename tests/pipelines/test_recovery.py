"""A dlt working folder that dlt cannot read no longer wedges every later run.

The chaos suite once found, after a SIGINT during an extract, a stored schema without dlt's
`_dlt_version` table: the next run failed in `dlt.pipeline(...)` before it started, and so
would every run after it. Here that damage is written by hand, then the next run must set
the folder aside, start from the warehouse and leave it equal to the API, with no duplicates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dlt.common.schema.utils import generate_version_hash

from pipelines.run.recovery import DAMAGED_SUFFIX
from pipelines.run.sync import run_sync
from pipelines.run.target import Target
from sources.drone_ops import read_source_config

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
