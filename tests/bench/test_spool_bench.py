"""`python -m bench.spool` at a small count: past two segments, what was applied is removed,
so the folder ends far smaller than the never-trimmed file would be. No timing assertions."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.spool import measure


@pytest.mark.slow
def test_spool_bench_keeps_the_folder_bounded(tmp_path: Path) -> None:
    result = measure(tmp_path / "spool", events=2500, apply_every=250)
    assert result["single_file_bytes"] > 2 * result["segment_bytes_limit"]
    assert result["segments_end"] == 1
    assert result["bad_records"] == 0
    assert 0 < result["id_lists_bytes"] < 2500 * 40
    bound = result["segment_bytes_limit"] * 2 + result["id_lists_bytes"]
    assert result["spool_bytes_peak"] <= bound, result
    assert (
        result["spool_bytes_end"] <= result["segment_bytes_limit"] + result["id_lists_bytes"] + 4096
    )
