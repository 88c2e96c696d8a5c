"""The spool: received events as JSON lines in numbered segment files, fsynced before any 2xx.

Why files and not the warehouse: the receiver must answer within the sender's timeout and must
not lose what it acknowledged, even when killed; an append plus `fsync` is both
(docs/events.md). Each line is `{"received_at": <ms>, "signed": <bool>, "event": {...}}`.

Why segments: one file would grow forever. Only the newest segment is written, so every older
one is final; one wholly applied is removed (`release`), its delivery ids kept in a small
`events.<n>.ids` file so a late retry is still a duplicate for `DEDUP_WINDOW_S`. A torn last
line (a crash, a full disk) is cut, so the next record starts on a line of its own. The folder
is held under an exclusive `flock` (the first lock of the order in `run/lock.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..run.durable import replace_durably
from ..run.lock import take_flock

SEGMENT_BYTES = 1024 * 1024
"""A new segment starts once the newest holds this much (about 1,000 events of 1 KiB)."""
DEDUP_WINDOW_S = 72 * 3600
"""How long the ids of removed segments are kept: longer than senders retry (Stripe: 3 days)."""
SEGMENT = re.compile(r"^events\.(\d{8,})\.jsonl$")
IDS = re.compile(r"^events\.(\d{8,})\.ids$")


class SpoolBusy(Exception):
    """Another process holds the spool folder."""


def segment_name(number: int) -> str:
    return f"events.{number:08d}.jsonl"


def segment_numbers(directory: Path) -> list[int]:
    """The segments on disk, oldest first (none if the folder does not exist)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(SEGMENT.match, names) if m)


def decode_record(line: bytes) -> dict[str, Any] | None:
    """One spool line as its record if it names a delivery id; None for a torn or unreadable
    line. The other fields are checked by the applier, which quarantines what is wrong."""
    if not line.endswith(b"\n"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    event = record.get("event") if isinstance(record, dict) else None
    if not isinstance(event, dict) or not isinstance(event.get("delivery_id"), str):
        return None
    return record


def encode_record(event: dict[str, Any], received_at_ms: int, signed: bool) -> bytes:
    """One spool line; compact JSON has no raw newline, so a record is always one line."""
    record = {"received_at": received_at_ms, "signed": signed, "event": event}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True, order=True)
class Position:
    """A place in the spool: `offset` bytes into segment `segment`, after `line` lines."""

    segment: int = 0
    offset: int = 0
    line: int = 0


@dataclass(frozen=True)
class SpoolLine:
    """One whole line as read, with where it is (its 1-based line number in its segment)."""

    segment: int
    line: int
    data: bytes


@dataclass
class Batch:
    """Lines read from a position, and the position after the last of them."""

    lines: list[SpoolLine]
    end: Position


def read_from(directory: Path, start: Position, limit: int) -> Batch:
    """Whole lines from `start` on, at most about `limit` bytes, across segments. In the
    newest segment a line still being written is left for the next read; in a final one the
    bytes after its last newline (a write that failed and could not be cut) are one line, so
    the applier quarantines them instead of waiting for them forever."""
    numbers = [n for n in segment_numbers(directory) if n >= start.segment]
    position = start
    lines: list[SpoolLine] = []
    for index, number in enumerate(numbers):
        if number != position.segment:
            position = Position(number, 0, 0)
        final = index < len(numbers) - 1
        with (directory / segment_name(number)).open("rb") as file:
            file.seek(position.offset)
            data = file.read(limit)
            at_end = not file.read(1)
        whole = data if final and at_end else data[: data.rfind(b"\n") + 1]
        line = position.line
        for raw in whole.splitlines(keepends=True):
            line += 1
            lines.append(SpoolLine(number, line, raw))
        position = Position(number, position.offset + len(whole), line)
        limit -= len(whole)
        if not (final and at_end) or limit <= 0:
            break
    return Batch(lines, position)


class Spool:
    """The open spool: its newest segment, the delivery ids it knows, and the folder's lock;
    `append` is atomic per event (duplicate check, write, fsync), so threads may call it."""

    def __init__(self, directory: Path, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._dir_fd = os.open(directory, os.O_RDONLY)
        if not take_flock(self._dir_fd):
            os.close(self._dir_fd)
            raise SpoolBusy(f"{directory} is held by another receiver")
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        """Each known delivery id and the segment it came in, so expired ids can be dropped."""
        self._torn = False
        """A failed write could not be cut back: the next event starts a new segment."""
        numbers = segment_numbers(directory) or [_next_number(directory)]
        self._active = numbers[-1]
        self._fd = self._open_segment(self._active)
        self.cut_bytes = _cut_torn_tail(self._fd)
        self._load_ids(numbers)

    @property
    def active_segment(self) -> int:
        """The number of the segment events are appended to now."""
        return self._active

    @property
    def path(self) -> Path:
        """The segment events are appended to now."""
        return self.directory / segment_name(self._active)

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)

    def append(self, event: dict[str, Any], received_at_ms: int, signed: bool) -> bool:
        """Writes and fsyncs the event; False (writing nothing) for a known delivery id. A write
        that fails is cut back before the error is raised, so no half line is left."""
        line = encode_record(event, received_at_ms, signed)
        delivery_id = event["delivery_id"]
        with self._lock:
            if delivery_id in self._seen:
                return False
            size = os.fstat(self._fd).st_size
            if self._torn or (size and size + len(line) > self.segment_bytes):
                self._rotate()
                size = 0
            try:
                _write_all(self._fd, line)
                os.fsync(self._fd)
            except OSError:
                self._torn = not _cut_back(self._fd, size)
                raise
            self._seen[delivery_id] = self._active
            return True

    def release(self, before: int) -> int:
        """Removes the (wholly applied) segments numbered below `before`, never the newest,
        keeping their ids for `DEDUP_WINDOW_S`; returns how many were removed."""
        removed = 0
        for number in segment_numbers(self.directory):
            if number >= min(before, self._active):
                break
            segment = self.directory / segment_name(number)
            ids = "".join(json.dumps(i) + "\n" for i in read_spool_ids(segment))
            replace_durably(self.directory / f"events.{number:08d}.ids", ids)
            segment.unlink()
            removed += 1
        if removed:
            os.fsync(self._dir_fd)
        self._expire_ids()
        return removed

    def disk_usage(self) -> tuple[int, int]:
        """The bytes of every file in the spool folder, and how many segments there are."""
        total = segments = 0
        with os.scandir(self.directory) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile by `release`
                    if entry.is_file():
                        total += entry.stat().st_size
                        segments += bool(SEGMENT.match(entry.name))
        return total, segments

    def close(self) -> None:
        with self._lock:
            for fd in (self._fd, self._dir_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._dir_fd = -1

    def _open_segment(self, number: int) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
        fd = os.open(self.directory / segment_name(number), flags, 0o600)
        os.fsync(self._dir_fd)  # the new file's name is durable before anything is acknowledged
        return fd

    def _rotate(self) -> None:
        fd = self._open_segment(self._active + 1)
        os.close(self._fd)
        self._fd = fd
        self._active += 1
        self._torn = False

    def _load_ids(self, numbers: list[int]) -> None:
        """The delivery ids of the segments and of the kept id files (expired ones removed)."""
        self._expire_ids()
        for name in sorted(os.listdir(self.directory)):
            match = IDS.match(name)
            if match:
                number = int(match.group(1))
                text = (self.directory / name).read_text(encoding="utf-8", errors="replace")
                for line in text.splitlines():
                    with contextlib.suppress(ValueError):  # a damaged line: one id less
                        self._seen[str(json.loads(line))] = number
        for number in numbers:
            for delivery_id in read_spool_ids(self.directory / segment_name(number)):
                self._seen[delivery_id] = number

    def _expire_ids(self) -> None:
        """Removes id files older than `DEDUP_WINDOW_S`, and their ids from memory."""
        cutoff = time.time() - DEDUP_WINDOW_S
        expired = []
        for name in os.listdir(self.directory):
            match = IDS.match(name)
            if match and (self.directory / name).stat().st_mtime < cutoff:
                (self.directory / name).unlink()
                expired.append(int(match.group(1)))
        if expired:
            newest = max(expired)
            with self._lock:
                self._seen = {k: n for k, n in self._seen.items() if n > newest}


def read_spool_ids(segment: Path) -> list[str]:
    """The delivery ids of one segment's readable lines (a missing segment has none)."""
    if not segment.exists():
        return []
    with segment.open("rb") as file:
        return [r["event"]["delivery_id"] for r in map(decode_record, file) if r is not None]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _cut_back(fd: int, size: int) -> bool:
    """Cuts a failed write's part back off. If even that fails, the segment is left with a
    torn tail (quarantined by the applier once the segment is final): returns False."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)
        return True
    return False


def _next_number(directory: Path) -> int:
    """The first segment's number: after any whose ids are still kept, so a segment name is
    never used twice (the quarantine names records by segment and line)."""
    kept = [int(m.group(1)) for m in map(IDS.match, os.listdir(directory)) if m]
    return max(kept, default=0) + 1


def _cut_torn_tail(fd: int) -> int:
    """Truncates a last line without its newline (never acknowledged); returns bytes cut."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    keep = 0
    for offset, chunk in _chunks_backwards(fd, size):
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            keep = offset + newline + 1
            break
    os.ftruncate(fd, keep)
    os.fsync(fd)
    return size - keep


def _chunks_backwards(fd: int, size: int, chunk: int = 65536) -> Iterator[tuple[int, bytes]]:
    end = size
    while end > 0:
        start = max(0, end - chunk)
        yield start, os.pread(fd, end - start, start)
        end = start
