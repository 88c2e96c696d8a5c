"""Smoke test of `python -m bench` on a small custom workspace (`SCALE`: the sizes matter to
the timings only, which are not asserted): it completes, writes every variant, and ours
fetches exactly the pages the raw floor fetches.

The opt-in `postgres` variant runs in the same invocation, so its pages are checked against
the same floor and its ratios against the same DuckDB syncs, for about 12 s more (one server
start, three syncs) instead of a second simulator and a second set of DuckDB syncs. So does the
opt-in `cli` variant (`drone-sync run` twice, models included): the quiet second run must
rebuild no model and write no row."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.postgres import PASSWORD

from .command import REPO_ROOT, run_bench

SCALE = ["--scale", "custom", "--projects", "10", "--jobs-per-project", "2", "--members", "4"]
SCALE += ["--webhooks", "2", "--logs-per-webhook", "40"]
"""Enough projects that the rolling job refresh's eighth is fewer than all of them, enough
rows for every table and page kind; the figures are not asserted, so no more."""


@pytest.mark.e2e
@pytest.mark.slow
def test_bench_small_smoke(tmp_path: Path) -> None:
    arguments = [*SCALE, "--runs", "1", "--latency-ms", "0", "--no-models"]
    arguments += ["--only", "ours,baseline,tuned,floor,dltfloor,postgres,cli"]
    document, printed = run_bench(arguments, tmp_path / "small.json", timeout=600)
    variants = document["variants"]
    for label in (
        "ours_initial",
        "ours_nochange",
        "ours_churn",
        "ours_rolling",
        "floor",
        "floor_nochange",
        "dltfloor",
        "dltfloor_nochange",
        "baseline",
        "tuned",
        "postgres_initial",
        "postgres_nochange",
        "postgres_churn",
        "cli_initial",
        "cli_nochange",
    ):
        assert label in variants, label
        assert variants[label]["seconds"] > 0
        assert variants[label]["requests"] > 0
    # same pages: ours and the floor, and the rest_api baselines configured for the same endpoints
    assert variants["ours_initial"]["requests"] == variants["floor"]["requests"]
    assert variants["ours_nochange"]["requests"] == variants["floor_nochange"]["requests"]
    assert variants["baseline"]["requests"] == variants["floor"]["requests"]
    assert variants["tuned"]["requests"] == variants["floor"]["requests"]
    # the dlt floor loads exactly the floor's pages
    assert variants["dltfloor"]["requests"] == variants["floor"]["requests"]
    assert variants["dltfloor_nochange"]["requests"] == variants["floor_nochange"]["requests"]
    assert document["ratios"]["ours/dlt floor"] is not None
    # a re-sync with no change asks each webhook's log once
    hooks = document["workspace"]["webhooks"]
    assert variants["ours_nochange"]["delivery_requests"] == [hooks]
    # the rolling job refresh walks a slice of the projects' jobs and, with nothing changed,
    # writes nothing
    assert variants["ours_rolling"]["requests"] < variants["ours_nochange"]["requests"]
    assert variants["ours_rolling"]["rows_written"] == [0]
    assert "ours/floor" in document["ratios"]
    assert "ours_initial" in printed
    # the same sync into PostgreSQL: the same pages, and a quiet re-sync writes nothing
    assert variants["postgres_initial"]["requests"] == variants["floor"]["requests"]
    assert variants["postgres_nochange"]["requests"] == variants["floor_nochange"]["requests"]
    assert variants["postgres_nochange"]["delivery_requests"] == [hooks]
    assert variants["postgres_nochange"]["rows_written"] == [0]
    assert variants["postgres_churn"]["rows_written"][0] > 0
    assert document["ratios"]["postgres/duckdb initial"] is not None
    assert document["ratios"]["postgres/duckdb no change"] is not None
    assert document["postgres"]["fsync"] == "off"
    assert "ours (postgres)" in printed
    # a scheduled run through the CLI: the first builds the models, a quiet one reuses them
    assert variants["cli_initial"]["models_rebuilt"] == [True]
    assert variants["cli_nochange"]["models_rebuilt"] == [False]
    assert variants["cli_nochange"]["rows_written"] == [0]
    assert variants["cli_nochange"]["requests"] == variants["floor_nochange"]["requests"]
    # the server's password reaches the workers through their environment only
    assert PASSWORD not in (tmp_path / "small.json").read_text()
    assert PASSWORD not in printed


@pytest.mark.e2e
@pytest.mark.slow
def test_bench_against_another_checkout_runs_its_code_beside_ours(tmp_path: Path) -> None:
    """`--against CHECKOUT` runs that checkout's sync (its own `.venv`) alternately with this
    one: against this very checkout, both fetch the same pages and write the same rows, and the
    printed block gives this/previous per variant."""
    if not (REPO_ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("the repository has no .venv (the README's commands create it)")
    arguments = [*SCALE, "--runs", "1", "--no-models", "--only", "ours"]
    arguments += ["--against", str(REPO_ROOT)]
    document, printed = run_bench(arguments, tmp_path / "against.json", timeout=600)
    variants = document["variants"]
    for label in ("ours_initial", "ours_nochange", "ours_rolling", "ours_churn"):
        ours, previous = variants[label], variants[f"prev_{label}"]
        assert ours["requests"] == previous["requests"], label
        assert ours.get("rows_written") == previous.get("rows_written"), label
        assert document["against"]["ratios"][label]["seconds"] > 0
    assert variants["ours_churn"]["rows_written"][0] > 0
    assert f"this checkout / {REPO_ROOT}" in printed
