"""A pipeline's destination factory works out its capabilities once per naming convention
(`pipelines/run/destination.py`): what dlt would answer, without resolving the destination's
configuration again at each ask, each caller with a copy of its own, and under dlt's own
destination type, which the pipeline's state and dlt's tooling read.

Checked against a factory dlt makes itself from the same credentials, and by counting dlt's
configuration resolutions (`resolve_configuration`, the function every resolution goes
through) on both tested destinations.
"""

from __future__ import annotations

from typing import Any

import dlt
import pytest
from dlt.common.configuration import resolve as dlt_resolve
from dlt.common.normalizers.naming.snake_case import NamingConvention

from drone_ops_sync.pipelines.run.destination import make_pipeline
from drone_ops_sync.pipelines.run.target import Target


def _dlt_factory(pipeline: dlt.Pipeline) -> Any:
    """dlt's own factory of the pipeline's destination type, with the same credentials."""
    made: Any = pipeline.destination
    own: Any = getattr(dlt.destinations, made.destination_name)
    return own(credentials=made.config_params["credentials"])


def _fields(caps: Any) -> dict[str, Any]:
    """The capabilities' fields; a callable (a fresh `functools.partial` at each ask) by what
    it calls with what."""
    return {key: repr(value) if callable(value) else value for key, value in dict(caps).items()}


def _counted_resolutions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every configuration dlt resolves from now on, as it is asked to."""
    resolutions: list[Any] = []
    resolve = dlt_resolve.resolve_configuration

    def counted(*args: Any, **kwargs: Any) -> Any:
        resolutions.append(args[0])
        return resolve(*args, **kwargs)

    monkeypatch.setattr(dlt_resolve, "resolve_configuration", counted)
    monkeypatch.setattr("dlt.common.destination.reference.resolve_configuration", counted)
    return resolutions


def test_capabilities_are_dlts_own_and_resolved_once_per_naming(
    any_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = make_pipeline(any_target)
    factory: Any = pipeline.destination
    naming = NamingConvention()
    resolutions = _counted_resolutions(monkeypatch)

    first = factory.capabilities(naming=naming)
    unnamed = factory.capabilities()
    asked = len(resolutions)
    again = [factory.capabilities(naming=naming) for _ in range(5)]
    again += [factory.capabilities() for _ in range(5)]

    # at most once per naming convention (none at all for one asked already), then never
    assert asked <= 2
    assert len(resolutions) == asked
    # where dlt's own factory resolves at every ask
    own = _dlt_factory(pipeline)
    for _ in range(3):
        own.capabilities(naming=naming)
    assert len(resolutions) >= asked + 3
    expected = _dlt_factory(pipeline).capabilities(naming=naming)
    assert _fields(first) == _fields(expected)
    assert all(_fields(caps) == _fields(expected) for caps in again[:5])
    assert all(_fields(caps) == _fields(unnamed) for caps in again[5:])
    assert _fields(unnamed) == _fields(_dlt_factory(pipeline).capabilities())
    # each caller its own copy: dlt sets fields on what it gets
    first.preferred_loader_file_format = "jsonl"
    assert factory.capabilities(naming=naming).preferred_loader_file_format == (
        expected.preferred_loader_file_format
    )
    assert factory.destination_type == _dlt_factory(pipeline).destination_type
    assert factory.destination_type == f"dlt.destinations.{any_target.destination}"


def test_each_pipeline_works_its_capabilities_out_afresh(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is kept from one pipeline (one workspace's run) for the next."""
    naming = NamingConvention()
    one: Any = make_pipeline(target).destination
    other: Any = make_pipeline(target.for_workspace("second")).destination
    resolutions = _counted_resolutions(monkeypatch)
    one.capabilities(naming=naming)
    asked = len(resolutions)
    other.capabilities(naming=naming)
    assert asked >= 1 and len(resolutions) == 2 * asked
