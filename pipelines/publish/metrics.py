"""Reads the metrics mart (`<dataset>_marts.fct_metrics`, declared once in
models/marts/metrics/fct_metrics.sql), for the dashboard, the demo and `drone-sync metrics`.

Why a reader and no arithmetic here: every number is computed by the mart, so the dashboard,
the demo, the CLI and a BI tool reading the snapshot show the same value. The one thing done
here is what the mart's documentation prescribes for the fleet's total (docs/metrics.md):
counts add up across workspaces, and a rate is the sum of its numerators over the sum of its
denominators, never an average of rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from drone_ops_sync.sources.drone_ops import DroneOpsError

from ..run.door import SNAPSHOT_SETTING, read_only

METRICS_TABLE = "fct_metrics"
ALL_WORKSPACES = "(all)"
"""The workspace column of the fleet's totals in `drone-sync metrics`' output."""

# `{marts}` is the quoted marts schema; the fleet's totals, as docs/metrics.md documents them
PER_WORKSPACE_SQL = """
select workspace, metric, label, unit, description, numerator, denominator, value, measured_date
from {marts}.fct_metrics
order by workspace, display_order
"""
FLEET_SQL = """
select
    metric,
    any_value(label) as label,
    any_value(unit) as unit,
    any_value(description) as description,
    sum(numerator) as numerator,
    sum(denominator) as denominator,
    case
        when any_value(unit) = 'count' then sum(numerator)
        when sum(denominator) > 0 then sum(numerator) / sum(denominator)
    end as value,
    max(measured_date) as measured_date
from {marts}.fct_metrics
group by metric
order by min(display_order)
"""


@dataclass(frozen=True)
class Metric:
    """One metric of one workspace (or of the whole fleet, workspace `ALL_WORKSPACES`)."""

    workspace: str
    name: str
    label: str
    unit: str
    description: str
    numerator: float
    denominator: float | None
    value: float | None
    measured_date: str

    def shown(self) -> str:
        """The value as the dashboard shows it: a whole count, or a rate in percent."""
        if self.value is None:
            return "-"
        if self.unit == "ratio":
            return f"{self.value * 100:.1f}%"
        return f"{self.value:,.0f}"


def quoted_marts(dataset: str) -> str:
    return '"' + f"{dataset}_marts".replace('"', '""') + '"'


def has_metrics(con: duckdb.DuckDBPyConnection, dataset: str) -> bool:
    """Whether the marts hold the metrics table (not before the models' first build)."""
    row = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
        [f"{dataset}_marts", METRICS_TABLE],
    ).fetchone()
    return bool(row and row[0])


def read_metrics(con: duckdb.DuckDBPyConnection, dataset: str) -> list[Metric]:
    """Every workspace's metrics, then the fleet's totals; empty before the first build."""
    if not has_metrics(con, dataset):
        return []
    marts = quoted_marts(dataset)
    found = [_metric(*row) for row in con.execute(PER_WORKSPACE_SQL.format(marts=marts)).fetchall()]
    fleet = con.execute(FLEET_SQL.format(marts=marts)).fetchall()
    return [*found, *(_metric(ALL_WORKSPACES, *row) for row in fleet)]


def read_metrics_file(path: Path, dataset: str) -> list[Metric]:
    """`read_metrics` on the BI snapshot, opened read-only."""
    try:
        with read_only(path, SNAPSHOT_SETTING) as con:
            return read_metrics(con, dataset)
    except duckdb.Error as exc:
        raise DroneOpsError(f"could not read the metrics of {path}: {exc}") from None


def _metric(*row: Any) -> Metric:
    """A row of the metrics SQL, its columns in `Metric`'s order: numbers as floats (a missing
    denominator or value stays None), the rest as text."""
    workspace, name, label, unit, description, numerator, denominator, value, measured = row
    return Metric(
        workspace=str(workspace),
        name=str(name),
        label=str(label),
        unit=str(unit),
        description=str(description),
        numerator=float(numerator or 0),
        denominator=None if denominator is None else float(denominator),
        value=None if value is None else float(value),
        measured_date=str(measured),
    )
