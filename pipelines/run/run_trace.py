"""Every load of one sync run goes through `RunLoads`, which keeps their dlt traces and saves
them as one, so `dlt pipeline <name> trace` (and the dashboard) show the run's data loads.

Why: a sync makes several `pipeline.run` calls (delivery waves, one per load group, on a new
warehouse its record), and dlt keeps only the last call's trace. The loads stay apart (the
record carries each table's outcome, known only once its load finished), and the trace saved
at the end is theirs together, in order. A record written by SQL and a quiet run's groups are
no dlt load and have no step in it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import dlt
from dlt.common.schema import Schema
from dlt.destinations.sql_client import SqlClientBase
from dlt.extract.source import DltSource
from dlt.pipeline.trace import PipelineStepTrace, PipelineTrace, save_trace

from drone_ops_sync.sources.drone_ops.internal import settings as source_settings

from .door import writing
from .target import Target

T = TypeVar("T")


class RunLoads:
    """The loads of one run into one pipeline, in the target's loader file format."""

    def __init__(self, target: Target, pipeline: dlt.Pipeline) -> None:
        self.target = target
        self.pipeline = pipeline
        self.traces: list[PipelineTrace] = []
        self._synced = False

    def run(self, data: Any) -> None:
        """One load of `data`; its trace is kept whether it succeeds or raises.

        Why not `pipeline.run`: an extract that yields nothing would still pay for normalize
        and load, and with a package a failed load left pending, `run` loads that package and
        returns without extracting `data` at all. The steps are dlt's own, in `run`'s order
        (state sync once, extract, normalize, load, a pending package taken along); an extract
        that wrote no job, with nothing pending, ends there."""
        schema = None if isinstance(data, DltSource) else self._source_schema()
        pipeline = self.pipeline
        file_format: Any = self.target.loader_file_format()
        # the whole call: dlt opens the destination to sync its state and again to load, and a
        # group's extract reads what its walk stage already spilled; the write lock (the file's
        # access lock on DuckDB) is the event receiver's too
        with writing(self.target, pipeline):
            if not self._synced and pipeline.config.restore_from_destination:
                pipeline.sync_destination()
            self._synced = True
            pending = pipeline.has_pending_data
            try:
                extracted = pipeline.extract(data, schema=schema, loader_file_format=file_format)  # type: ignore[arg-type]
            finally:
                self._keep_trace()
            wrote = any(info.jobs.get("new_jobs") for info in extracted.load_packages)
            if not wrote and not pending:
                pipeline.abort_packages()  # only this empty extract is pending: it is deleted
                return
            for step in (pipeline.normalize, pipeline.load):
                try:
                    step()
                finally:
                    self._keep_trace()

    def write(self, write: Callable[[SqlClientBase[Any]], T]) -> T:
        """A write by SQL through the pipeline's SQL client, in the lock a load takes (the write
        lock, a full disk as one line); no dlt load, so it leaves no trace."""
        with writing(self.target, self.pipeline):
            return write(self.pipeline.sql_client())

    def _source_schema(self) -> Schema:
        """The source's schema (`drone_ops`) for the run's own tables: a bare resource goes
        to the pipeline's default schema, which on a new warehouse dlt would name after the
        pipeline (the warehouse's name), not the source."""
        name = source_settings.SOURCE_NAME
        if name in self.pipeline.schema_names:
            return self.pipeline.schemas[name].clone()
        return Schema(name)

    def _keep_trace(self) -> None:
        """Keeps the pipeline's last trace; dlt merges the steps called one by one into one
        trace (same transaction id), so a newer copy replaces the one kept before."""
        trace = self.pipeline.last_trace
        if trace is None:
            return
        for index, kept in enumerate(self.traces):
            if kept.transaction_id == trace.transaction_id:
                self.traces[index] = trace
                return
        self.traces.append(trace)

    def save_trace(self) -> set[str]:
        """Saves the run's loads as the pipeline's last trace (read by `dlt pipeline <name>
        trace` and the dashboard); returns the load ids it names, which the pruning of
        completed packages keeps. A package dlt dropped as empty is left out (its extract step
        still lists it), so every package the trace names is one the working folder holds."""
        pipeline = self.pipeline
        if not self.traces:
            # a quiet run made no load: the newest loading run's trace stays, and so must
            # every package it names
            return _named(pipeline.last_trace.steps if pipeline.last_trace else [])
        held = {
            *pipeline.list_extracted_load_packages(),
            *pipeline.list_normalized_load_packages(),
            *pipeline.list_completed_load_packages(),
        }
        steps = [_held_only(step, held) for trace in self.traces for step in trace.steps]
        first, last = self.traces[0], self.traces[-1]
        combined = first._replace(
            steps=steps,
            finished_at=last.finished_at,
            resolved_config_values=last.resolved_config_values,
        )
        save_trace(pipeline.working_dir, combined)
        return _named(steps)


def _named(steps: list[PipelineStepTrace]) -> set[str]:
    """The load ids of the packages the steps name."""
    return {
        package.load_id
        for step in steps
        for package in getattr(step.step_info, "load_packages", None) or ()
    }


def _held_only(step: PipelineStepTrace, held: set[str]) -> PipelineStepTrace:
    """The step as dlt traced it, naming only the load packages in `held`."""
    info: Any = step.step_info
    packages = getattr(info, "load_packages", None)
    if not packages or all(package.load_id in held for package in packages):
        return step
    kept = [package for package in packages if package.load_id in held]
    info = info._replace(
        load_packages=kept, loads_ids=[load_id for load_id in info.loads_ids if load_id in held]
    )
    return step._replace(step_info=info)
