"""The API's value lists are written twice: once for the sync (sources/drone_ops/settings.py)
and once for the dbt project (`vars` in models/dbt_project.yml, used by the models' macros and
the value lists of the model_checks tests). Both must say the same, or a value the sync
accepts fails a model test, or a count per status misses one."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from drone_ops_sync.sources.drone_ops.internal import settings

PROJECT_FILE = pathlib.Path(__file__).resolve().parents[2] / "models" / "dbt_project.yml"


def dbt_vars() -> dict[str, Any]:
    variables: dict[str, Any] = yaml.safe_load(PROJECT_FILE.read_text())["vars"]
    return variables


@pytest.mark.parametrize(
    ("var", "python_list"),
    [
        ("statuses", settings.STATUSES),
        ("priorities", settings.PRIORITIES),
        ("job_patterns", settings.JOB_PATTERNS),
        ("recurring_frequencies", settings.RECURRING_FREQUENCIES),
        ("roles", settings.ROLES),
    ],
)
def test_dbt_var_equals_the_sync_settings(var: str, python_list: tuple[str, ...]) -> None:
    assert dbt_vars()[var] == list(python_list)


def test_closed_statuses_are_statuses() -> None:
    variables = dbt_vars()
    assert variables["closed_statuses"]
    assert set(variables["closed_statuses"]) <= set(variables["statuses"])


def test_every_list_var_is_a_list_of_distinct_strings() -> None:
    lists = {name: value for name, value in dbt_vars().items() if isinstance(value, list)}
    assert set(lists) >= {"statuses", "priorities", "job_patterns", "roles", "user_kinds"}
    for name, values in lists.items():
        assert all(isinstance(value, str) for value in values), name
        assert len(set(values)) == len(values), name
