"""Which records are quarantined and which batches are retried.

A record is bad when it cannot become rows without the warehouse (not JSON, a field of the
wrong type, a value no row can hold): it is kept in `quarantine.jsonl` once, with its segment,
line and reason, and the applier moves past it. A batch whose load fails (a warehouse busy or
unreachable right now) quarantines nothing and moves nothing: it is read again next tick.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest

from drone_ops_sync.pipelines.listen import apply as apply_module
from drone_ops_sync.pipelines.listen.apply import AppliedMark, Applier
from drone_ops_sync.pipelines.listen.quarantine import (
    QUARANTINE_FILE,
    Quarantine,
    count_quarantined,
    sort_lines,
)
from drone_ops_sync.pipelines.listen.spool import (
    Position,
    Spool,
    SpoolLine,
    encode_record,
    segment_name,
)
from drone_ops_sync.pipelines.run.lock import WarehouseBusy
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.sources.drone_ops.internal import ReceivedEvent


def _event(delivery_id: str, **overrides: object) -> dict[str, object]:
    data = {"id": "prj_1", "name": "n", "updated": 1_700_000_000_000}
    body: dict[str, object] = {
        "delivery_id": delivery_id,
        "event": "project.updated",
        "timestamp": 1_700_000_000_000,
        "workspace_id": "ws",
        "data": data,
    }
    body.update(overrides)
    return body


def _line(number: int, data: bytes) -> SpoolLine:
    return SpoolLine(1, number, data)


def test_bad_records_are_told_apart_with_their_reason() -> None:
    good = encode_record(_event("ok"), 1, True)
    lines = [
        _line(1, good),
        _line(2, b"{not json\n"),
        _line(
            3,
            json.dumps({"received_at": "17956x", "signed": True, "event": _event("x")}).encode()
            + b"\n",
        ),
        _line(4, encode_record(_event("far", timestamp=10**30), 1, True)),
        _line(5, b'{"received_at": 1, "signed": true, "event": {"delivery_id": "t"'),
        _line(6, encode_record(_event("ok2"), 2, False)),
    ]
    events, bad = sort_lines(lines)
    assert [e.delivery_id for e in events] == ["ok", "ok2"]
    reasons = {line.line: reason for line, reason in bad}
    assert sorted(reasons) == [2, 3, 4, 5]
    assert reasons[2].startswith("not JSON")
    assert "received_at" in reasons[3] and "17956x" in reasons[3]
    assert "rows" in reasons[4] and "timestamp" in reasons[4]
    assert "torn" in reasons[5]


def test_a_record_is_quarantined_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    line = _line(7, b"garbage\n")
    with caplog.at_level(logging.WARNING):
        assert Quarantine(tmp_path).add(line, "not JSON") is True
        again = Quarantine(tmp_path)  # a restart reads what is already kept
        assert again.add(line, "not JSON") is False
    assert len(again) == 1 and count_quarantined(tmp_path) == 1
    warnings = [r.getMessage() for r in caplog.records if "quarantined" in r.getMessage()]
    assert len(warnings) == 1 and f"{segment_name(1)} line 7" in warnings[0]
    entry = json.loads((tmp_path / QUARANTINE_FILE).read_text())
    assert (entry["segment"], entry["line"], entry["record"]) == (segment_name(1), 7, "garbage")


def test_a_torn_quarantine_entry_does_not_swallow_the_next(tmp_path: Path) -> None:
    (tmp_path / QUARANTINE_FILE).write_bytes(b'{"segment": "events.0000')
    assert Quarantine(tmp_path).add(_line(1, b"x\n"), "not JSON")
    assert count_quarantined(tmp_path) == 1


def test_a_failing_load_quarantines_nothing_then_the_batch_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = Spool(tmp_path / "spool")
    try:
        spool.append(_event("a"), 1, True)
        with (spool.path).open("ab") as file:
            file.write(
                b'{"received_at": "17956x", "signed": true, "event": {"delivery_id": "b"}}\n'
            )
        spool.append(_event("c"), 3, True)
        loads: list[list[str]] = []
        failures: list[Exception] = [
            WarehouseBusy("a run holds the workspace"),
            duckdb.IOException("Could not set lock on file"),
        ]

        def fake_apply(router: object, events: Sequence[ReceivedEvent]) -> dict[str, int]:
            if failures:
                raise failures.pop(0)
            loads.append([e.delivery_id for e in events])
            return {"applied": len(events)}

        monkeypatch.setattr(apply_module, "apply_batch", fake_apply)
        applier = Applier(Target(database=tmp_path / "w.duckdb"), spool, interval=1)
        assert applier.tick() is False  # busy: tried again next tick
        with pytest.raises(duckdb.IOException):
            applier.tick()  # unreachable: the loop logs it and tries again
        assert not (spool.directory / QUARANTINE_FILE).exists()
        assert AppliedMark(spool.directory).load() == Position()

        assert applier.tick() is True
        assert loads == [["a", "c"]]
        assert applier.stats.quarantined == 1 and applier.stats.applied == 2
        assert applier.tick() is False
        entry = json.loads((spool.directory / QUARANTINE_FILE).read_text())
        assert (entry["segment"], entry["line"]) == (spool.path.name, 2)
        assert AppliedMark(spool.directory).load().line == 3
    finally:
        spool.close()
