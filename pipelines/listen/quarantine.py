"""Spool records the applier cannot use, moved aside so they never block the ones after them.

A record is bad when it cannot become warehouse rows without the warehouse (not JSON, a field
of the wrong type, a value no row can hold): it would fail the same way on every try and wedge
the applier. It goes to `<spool>/quarantine.jsonl` with its segment, line and reason, one
warning each. What fails in the load (busy, unreachable, out of space) is the warehouse's, not
the record's: that batch stays in the spool (`apply.py`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from drone_ops_sync.sources.drone_ops.internal import ReceivedEvent, event_rows, project_versions

from .spool import SpoolLine, segment_name

QUARANTINE_FILE = "quarantine.jsonl"

log = logging.getLogger(__name__)


class BadRecord(ValueError):
    """A spool line that no retry can apply; the message says why."""


def decode_event(line: SpoolLine) -> ReceivedEvent:
    """The line's event, its record's fields checked; raises `BadRecord` saying what is wrong."""
    if not line.data.endswith(b"\n"):
        raise BadRecord("a torn line (no newline at its end)")
    try:
        record = json.loads(line.data)
    except ValueError as exc:
        raise BadRecord(f"not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    event, received_at, signed = (record.get(k) for k in ("event", "received_at", "signed"))
    if not isinstance(event, dict) or not isinstance(event.get("delivery_id"), str):
        raise BadRecord("event is not an object with a string delivery_id")
    if isinstance(received_at, bool) or not isinstance(received_at, int):
        raise BadRecord(f"received_at is not an integer: {received_at!r}"[:200])
    if not isinstance(signed, bool):
        raise BadRecord(f"signed is not true or false: {signed!r}"[:200])
    return ReceivedEvent(event, received_at, signed)


def _rows(events: Sequence[ReceivedEvent]) -> None:
    """Builds the rows the load would take (no warehouse involved), for their errors only."""
    project_versions([e for e in events if e.project() is not None], "check")
    event_rows(events, {})


def sort_lines(
    lines: Sequence[SpoolLine],
) -> tuple[list[ReceivedEvent], list[tuple[SpoolLine, str]]]:
    """The usable events of a batch, and each bad line with its reason: the whole batch is
    tried first (nothing wrong, the common case), each event alone only when that fails."""
    events: list[tuple[SpoolLine, ReceivedEvent]] = []
    bad: list[tuple[SpoolLine, str]] = []
    for line in lines:
        try:
            events.append((line, decode_event(line)))
        except BadRecord as exc:
            bad.append((line, str(exc)))
    try:
        _rows([event for _, event in events])
    except Exception:
        usable = []
        for line, event in events:
            try:
                _rows([event])
            except Exception as exc:
                bad.append((line, f"cannot be made into rows: {type(exc).__name__}: {exc}"))
            else:
                usable.append((line, event))
        events = usable
        bad.sort(key=lambda item: (item[0].segment, item[0].line))
    return [event for _, event in events], bad


class Quarantine:
    """`quarantine.jsonl`: one entry per bad record, written (and fsynced) before the applied
    mark moves past its line, and kept once: a crash in between reads the line again."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / QUARANTINE_FILE
        self._keys = _keys(self.path)
        self._torn = _torn(self.path)
        """A crash cut the last entry short: the next one starts on a new line."""

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, line: SpoolLine, reason: str) -> bool:
        """Keeps the line with where it was and why, and warns once; False if already kept."""
        record = line.data.decode("utf-8", "replace").removesuffix("\n")
        segment = segment_name(line.segment)
        key = (segment, line.line, record)
        if key in self._keys:
            return False
        entry = {
            "quarantined_at": int(time.time() * 1000),
            "segment": segment,
            "line": line.line,
            "reason": reason,
            "record": record,
        }
        data = json.dumps(entry, ensure_ascii=False).encode() + b"\n"
        with open(self.path, "ab") as file:
            file.write(b"\n" + data if self._torn else data)
            file.flush()
            os.fsync(file.fileno())
        self._keys.add(key)
        self._torn = False
        log.warning(
            "quarantined %s line %d of the spool: %s (kept in %s)",
            segment,
            line.line,
            reason[:300],
            self.path,
        )
        return True


def count_quarantined(directory: Path) -> int:
    """How many records a spool folder's quarantine holds (for `/health` without an applier)."""
    return len(_keys(directory / QUARANTINE_FILE))


def _torn(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            if file.tell() == 0:
                return False
            file.seek(-1, os.SEEK_END)
            return file.read(1) != b"\n"
    except FileNotFoundError:
        return False


def _keys(path: Path) -> set[tuple[str, int, str]]:
    """The (segment, line, record) of every readable entry; a torn last entry is not one."""
    keys: set[tuple[str, int, str]] = set()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return keys
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            keys.add((str(entry["segment"]), int(entry["line"]), str(entry["record"])))
        except (ValueError, KeyError, TypeError):
            continue
    return keys
