"""The spool file: a torn last line (a crash mid-write) is skipped on read and cut on open,
duplicates are refused, and one spool has one receiver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drone_ops_sync.pipelines.listen.spool import (
    SPOOL_FILE,
    Spool,
    SpoolBusy,
    encode_record,
    read_spool,
)


def _event(delivery_id: str) -> dict[str, object]:
    return {
        "delivery_id": delivery_id,
        "event": "project.created",
        "timestamp": 1,
        "workspace_id": "ws",
        "data": {"text": "line\nbreak"},
    }


def test_torn_last_line_skipped_on_read_and_cut_on_open(tmp_path: Path) -> None:
    path = tmp_path / SPOOL_FILE
    whole = encode_record(_event("a"), 1, True) + encode_record(_event("b"), 2, True)
    torn = encode_record(_event("c"), 3, True)[:-20]
    path.write_bytes(whole + torn)
    contents = read_spool(path)
    assert contents.delivery_ids() == ["a", "b"]
    assert contents.skipped == 1

    spool = Spool(tmp_path)
    try:
        assert spool.cut_bytes == len(torn)
        assert len(spool) == 2
        assert spool.append(_event("c"), 4, True) is True
        assert spool.append(_event("a"), 5, True) is False
    finally:
        spool.close()
    contents = read_spool(path)
    assert contents.delivery_ids() == ["a", "b", "c"]
    assert contents.skipped == 0
    assert path.read_bytes().count(b"\n") == 3
    assert json.loads(path.read_bytes().splitlines()[2])["event"]["data"]["text"] == "line\nbreak"


def test_unreadable_line_in_the_middle_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / SPOOL_FILE
    path.write_bytes(
        encode_record(_event("a"), 1, False)
        + b'{"not": "a record"}\n'
        + b"garbage\n"
        + encode_record(_event("b"), 2, False)
    )
    contents = read_spool(path)
    assert contents.delivery_ids() == ["a", "b"]
    assert contents.skipped == 2


def test_missing_file_reads_empty(tmp_path: Path) -> None:
    assert read_spool(tmp_path / SPOOL_FILE).records == []


def test_one_receiver_per_spool(tmp_path: Path) -> None:
    first = Spool(tmp_path)
    try:
        with pytest.raises(SpoolBusy):
            Spool(tmp_path)
    finally:
        first.close()
    Spool(tmp_path).close()
