"""What a spool holds, read whole for the tests' assertions (the applier reads it in batches:
`listen/spool.py` `read_from`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drone_ops_sync.pipelines.listen.spool import decode_record, segment_name, segment_numbers


@dataclass
class SpoolContents:
    """What a spool holds: the records in order and how many lines were unreadable."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0

    def delivery_ids(self) -> list[str]:
        return [record["event"]["delivery_id"] for record in self.records]


def read_spool(directory: Path) -> SpoolContents:
    """Every whole record of every segment on disk; an unreadable line is counted in
    `skipped`, never fatal."""
    contents = SpoolContents()
    for number in segment_numbers(directory):
        with (directory / segment_name(number)).open("rb") as file:
            for line in file:
                record = decode_record(line)
                if record is None:
                    contents.skipped += 1
                else:
                    contents.records.append(record)
    return contents
