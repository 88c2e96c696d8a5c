"""How wide text output is when it goes to a file or a pipe (a scheduler's log, `| less`):
COLUMNS when set, else 120 columns, and the run summary's figures whole even when they need
more (docs/operations.md, "Output")."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime

import pytest
from rich.table import Table

from drone_ops_sync.pipelines.console.output import PLAIN_WIDTH, make_console
from drone_ops_sync.pipelines.console.summary import print_summary
from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.sources.drone_ops import ALL_TABLES, SyncReport, TableResult

BOX_LINES = tuple("┏┃┡│└+|")


def piped_console(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> io.StringIO:
    """`make_console` as it runs with stdout going to a file; what it prints, captured."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    return out


@pytest.mark.parametrize(
    ("columns", "width"),
    [(None, PLAIN_WIDTH), ("100", 100), ("x", PLAIN_WIDTH), ("0", PLAIN_WIDTH)],
)
def test_piped_tables_fit_columns_or_120(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, width: int
) -> None:
    """A table of long text fits the width, its cells wrapped (it used to be 240 wide, and a
    demo's table of project names that wide in a log)."""
    out = piped_console(monkeypatch, columns)
    console = make_console()
    table = Table(title="wide")
    for name in ("id", "name", "status", "valid_from", "valid_to"):
        table.add_column(name)
    long = "São Gonçalo Cell Site 601 — Asset Health Review 2024 " * 3
    table.add_row("prj_01dd8d111cd12111", long, "weather_delayed", "2026-11-28", "2026-11-29")
    console.print(table)
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) == width, out.getvalue()


def test_run_summary_keeps_every_figure_whole_in_a_narrow_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The summary's columns never wrap: on a console narrower than they need, the table is
    drawn at their width rather than cutting a figure short with an ellipsis."""
    out = piped_console(monkeypatch, "60")
    report = SyncReport(run_id="20261128T000000Z-0", started_at=datetime.now(UTC))
    for name in ALL_TABLES:
        report.tables[name] = TableResult(
            name, "interrupted", 12_345_678, 12_345_678, 12_345_678, 1_234, 98_765, 98_765, 4_321
        )
    print_summary(make_console(), SyncOutcome(report=report))
    table = [line for line in out.getvalue().splitlines() if line.startswith(BOX_LINES)]
    assert table and "…" not in out.getvalue(), out.getvalue()
    assert sum("12,345,678" in line for line in table) == len(ALL_TABLES), out.getvalue()
