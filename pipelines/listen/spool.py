"""The spool: one append-only JSON-lines file of received events, fsynced before any 2xx.

Why a file and not the warehouse: the receiver must answer within the sender's timeout and
must not lose what it acknowledged, even when killed; an append plus `fsync` is both, and the
warehouse can be fed from the file later (docs/events.md). Each line is
`{"received_at": <ms>, "signed": <bool>, "event": {...as delivered...}}`.

A crash can leave a torn last line (written in part, never acknowledged): reading skips any
line that is not a whole record, and opening the file for appends first cuts such a tail, so
the next record starts on a line of its own. The file is held under an exclusive `flock` so
two receivers never append to one spool.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPOOL_FILE = "events.jsonl"


class SpoolBusy(Exception):
    """Another process holds the spool file."""


@dataclass
class SpoolContents:
    """What a spool file holds: the records in order and how many lines were unreadable."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0

    def delivery_ids(self) -> list[str]:
        return [record["event"]["delivery_id"] for record in self.records]


def read_spool(path: Path) -> SpoolContents:
    """Every whole record of a spool file (none if it does not exist); a torn or otherwise
    unreadable line is counted in `skipped`, never fatal."""
    contents = SpoolContents()
    if not path.exists():
        return contents
    with path.open("rb") as file:
        for line in file:
            record = decode_record(line)
            if record is None:
                contents.skipped += 1
            else:
                contents.records.append(record)
    return contents


def decode_record(line: bytes) -> dict[str, Any] | None:
    """One spool line as its record; None for a torn or unreadable line."""
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


class Spool:
    """The open spool file and the delivery ids it holds; `append` is atomic per event
    (check for a duplicate, write, fsync) under one lock, so threads may call it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SPOOL_FILE
        directory.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise SpoolBusy(f"{self.path} is held by another receiver") from None
        self.cut_bytes = _cut_torn_tail(self._fd)
        _fsync_directory(directory)
        contents = read_spool(self.path)
        self.skipped = contents.skipped
        self._seen = set(contents.delivery_ids())
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)

    def append(self, event: dict[str, Any], received_at_ms: int, signed: bool) -> bool:
        """Writes and fsyncs the event; returns False (writing nothing) for a delivery id
        already in the spool."""
        line = encode_record(event, received_at_ms, signed)
        delivery_id = event["delivery_id"]
        with self._lock:
            if delivery_id in self._seen:
                return False
            _write_all(self._fd, line)
            os.fsync(self._fd)
            self._seen.add(delivery_id)
            return True

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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


def _fsync_directory(directory: Path) -> None:
    """Makes the spool file's directory entry durable too (a new file is otherwise lost with
    its directory's unflushed metadata)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
