"""The spool's segments: a torn last line (a crash mid-write) is skipped on read and cut on open,
a failed write is cut back, duplicates are refused (also after their segment was removed), one
spool has one receiver, and segments wholly applied are removed so the disk stays bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import httpx
import pytest

from drone_ops_sync.pipelines.listen import spool as spool_module
from drone_ops_sync.pipelines.listen.app import Receiver, build_app
from drone_ops_sync.pipelines.listen.apply import AppliedMark, Applier
from drone_ops_sync.pipelines.listen.spool import (
    Position,
    Spool,
    SpoolBusy,
    encode_record,
    read_from,
    segment_name,
    segment_numbers,
)
from drone_ops_sync.pipelines.run.target import Target

from .spool_contents import read_spool

FIRST = segment_name(1)


def _event(delivery_id: str, pad: int = 0) -> dict[str, object]:
    return {
        "delivery_id": delivery_id,
        "event": "project.created",
        "timestamp": 1,
        "workspace_id": "ws",
        "data": {"text": "line\nbreak", "pad": "x" * pad},
    }


def test_torn_last_line_skipped_on_read_and_cut_on_open(tmp_path: Path) -> None:
    path = tmp_path / FIRST
    whole = encode_record(_event("a"), 1, True) + encode_record(_event("b"), 2, True)
    torn = encode_record(_event("c"), 3, True)[:-20]
    path.write_bytes(whole + torn)
    contents = read_spool(tmp_path)
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
    contents = read_spool(tmp_path)
    assert contents.delivery_ids() == ["a", "b", "c"]
    assert contents.skipped == 0
    assert path.read_bytes().count(b"\n") == 3
    assert json.loads(path.read_bytes().splitlines()[2])["event"]["data"]["text"] == "line\nbreak"


def test_unreadable_line_in_the_middle_is_skipped(tmp_path: Path) -> None:
    (tmp_path / FIRST).write_bytes(
        encode_record(_event("a"), 1, False)
        + b'{"not": "a record"}\n'
        + b"garbage\n"
        + encode_record(_event("b"), 2, False)
    )
    contents = read_spool(tmp_path)
    assert contents.delivery_ids() == ["a", "b"]
    assert contents.skipped == 2


def test_missing_folder_reads_empty(tmp_path: Path) -> None:
    assert read_spool(tmp_path / "nothing").records == []


def test_one_receiver_per_spool(tmp_path: Path) -> None:
    first = Spool(tmp_path)
    try:
        with pytest.raises(SpoolBusy):
            Spool(tmp_path)
    finally:
        first.close()
    Spool(tmp_path).close()


def test_a_failed_write_is_cut_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk mid-write: the caller gets the error (no 2xx), and the half line is gone,
    so the next acknowledged record is not glued to it and lost."""
    spool = Spool(tmp_path)
    try:
        assert spool.append(_event("a"), 1, True)
        real = spool_module._write_all

        def half_then_full(fd: int, data: bytes) -> None:
            os.write(fd, data[: len(data) // 2])
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(spool_module, "_write_all", half_then_full)
        with pytest.raises(OSError, match="No space"):
            spool.append(_event("b"), 2, True)
        monkeypatch.setattr(spool_module, "_write_all", real)
        assert spool.append(_event("b"), 3, True)
    finally:
        spool.close()
    contents = read_spool(tmp_path)
    assert contents.delivery_ids() == ["a", "b"] and contents.skipped == 0


def test_segments_rotate_and_reads_cross_them_in_order(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=2048)
    try:
        for number in range(40):
            assert spool.append(_event(f"d{number:02d}", pad=200), number, True)
        assert spool.path.name == segment_name(segment_numbers(tmp_path)[-1])
    finally:
        spool.close()
    numbers = segment_numbers(tmp_path)
    assert len(numbers) >= 4 and numbers == list(range(1, len(numbers) + 1))
    assert all((tmp_path / segment_name(n)).stat().st_size <= 2048 for n in numbers)

    first = read_from(tmp_path, Position(), limit=3000)
    rest = read_from(tmp_path, first.end, limit=10**6)
    lines = first.lines + rest.lines
    ids = [json.loads(line.data)["event"]["delivery_id"] for line in lines]
    assert ids == [f"d{number:02d}" for number in range(40)]
    assert [(line.segment, line.line) for line in lines[:2]] == [(1, 1), (1, 2)]
    assert lines[-1].segment == numbers[-1]
    assert read_from(tmp_path, rest.end, limit=10**6).lines == []


def test_applied_segments_are_removed_and_the_disk_stays_bounded(tmp_path: Path) -> None:
    """Append and apply side by side, as the receiver does: whatever is applied is removed, so
    the spool holds the newest segment plus what is not applied yet (and the removed
    segments' ids, about 20 bytes per event here)."""
    segment_bytes = 8192
    spool = Spool(tmp_path, segment_bytes=segment_bytes)
    position = Position()
    try:
        for number in range(2000):
            spool.append(_event(f"dlv_{number:05d}", pad=300), number, True)
            if number % 50 == 49:
                position = read_from(tmp_path, position, limit=10**6).end
                spool.release(position.segment)
                _, segments = spool.disk_usage()
                assert segments <= 2, sorted(os.listdir(tmp_path))
        segments_bytes = sum(
            (tmp_path / segment_name(n)).stat().st_size for n in segment_numbers(tmp_path)
        )
        assert segments_bytes <= 2 * segment_bytes
        # a sender's late retry of an event whose segment is gone is still a duplicate
        assert spool.append(_event("dlv_00000"), 1, True) is False
    finally:
        spool.close()
    again = Spool(tmp_path, segment_bytes=segment_bytes)
    try:
        assert again.append(_event("dlv_00001"), 1, True) is False
        assert len(again) == 2000
    finally:
        again.close()
    total = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert total < 2000 * 40 + 2 * segment_bytes, total


def test_the_newest_segment_is_never_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=512)
    try:
        for number in range(6):
            spool.append(_event(f"n{number}", pad=300), number, True)
        newest = segment_numbers(tmp_path)[-1]
        assert spool.release(newest + 10) == newest - 1
        assert segment_numbers(tmp_path) == [newest]
        assert spool.append(_event("n9"), 9, True)
    finally:
        spool.close()
    assert read_spool(tmp_path).delivery_ids() == ["n5", "n9"]


def test_a_full_disk_is_answered_503_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not acknowledged (so the sender retries), one line, and the next event is spooled."""
    real = spool_module._write_all

    def full(fd: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    async def deliver(spool: Spool) -> None:
        transport = httpx.ASGITransport(app=build_app(Receiver(spool=spool, secrets=())))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            monkeypatch.setattr(spool_module, "_write_all", full)
            refused = await client.post("/events", json=_event("a"))
            assert refused.status_code == 503 and refused.text.count("\n") == 1
            assert "No space left" in refused.text
            monkeypatch.setattr(spool_module, "_write_all", real)
            assert (await client.post("/events", json=_event("a"))).status_code == 202
            assert (await client.get("/health")).json()["spool_segments"] == 1

    spool = Spool(tmp_path)
    try:
        anyio.run(deliver, spool)
    finally:
        spool.close()
    assert read_spool(tmp_path).delivery_ids() == ["a"]


def test_a_mark_past_the_newest_segment_starts_over(tmp_path: Path) -> None:
    """Segments removed by hand but `applied.json` kept: the new events are not skipped."""
    AppliedMark(tmp_path).save(Position(segment=7, offset=100, line=1))
    spool = Spool(tmp_path)
    try:
        spool.append(_event("a"), 1, True)
        applier = Applier(Target(database=tmp_path / "w.duckdb"), spool, interval=1)
        assert applier.position == Position()
        batch = read_from(tmp_path, applier.position, limit=10**6)
        assert [line.line for line in batch.lines] == [1]
    finally:
        spool.close()
