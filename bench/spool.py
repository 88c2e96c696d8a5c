"""`python -m bench.spool`: how much disk the receiver's spool holds after many events.

Pushes `--events` events of about 1 KiB through the spool as the receiver does (each appended
and fsynced, as before a 202) while applying as the receiver's applier does every
`--apply-every` events (read from the applied mark, decode and check every record, save the
mark, remove the segments wholly applied). The warehouse load itself is left out: it does not
change what the spool keeps, and 100,000 events through dlt loads would measure dlt. Printed:
the bytes a single never-trimmed file would hold, the spool folder's bytes at the end and at
its peak (segments, the removed segments' id lists, the mark), and the segment count.

    python -m bench.spool --events 100000
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from drone_ops_sync.pipelines.listen.apply import MAX_BATCH_BYTES, AppliedMark
from drone_ops_sync.pipelines.listen.quarantine import sort_lines
from drone_ops_sync.pipelines.listen.spool import (
    SEGMENT_BYTES,
    Position,
    Spool,
    encode_record,
    read_from,
)


def _event(number: int) -> dict[str, object]:
    """A project.updated delivery about the size of the API's (about 1 KiB as spooled)."""
    return {
        "delivery_id": f"dlv_{number:012d}_5f0c2a9e",
        "event": "project.updated",
        "timestamp": 1_795_606_219_000 + number,
        "workspace_id": "ws_01HZX3D8V6M2Q9",
        "data": {
            "id": f"prj_{number % 2000:06d}",
            "name": f"Survey block {number}",
            "description": "Photogrammetry of the north quarry benches " * 12,
            "status": "active",
            "customer": {"id": "cus_000042", "name": "North Quarry Ltd"},
            "tags": ["survey", "quarry", "volumetrics"],
            "created": 1_790_000_000_000,
            "updated": 1_795_606_219_000 + number,
        },
    }


def _apply(spool: Spool, mark: AppliedMark, position: Position) -> tuple[Position, int]:
    """One applier tick without the load; returns the new mark and the bad records seen."""
    batch = read_from(spool.directory, position, MAX_BATCH_BYTES)
    if batch.end == position:
        return position, 0
    _, bad = sort_lines(batch.lines)
    mark.save(batch.end)
    spool.release(batch.end.segment)
    return batch.end, len(bad)


def measure(directory: Path, events: int, apply_every: int) -> dict[str, float | int]:
    spool = Spool(directory)
    mark = AppliedMark(directory)
    position, bad, single_file, peak = Position(), 0, 0, 0
    started = time.perf_counter()
    try:
        for number in range(events):
            event = _event(number)
            single_file += len(encode_record(event, 0, True))
            spool.append(event, int(time.time() * 1000), True)
            if (number + 1) % apply_every == 0:
                peak = max(peak, spool.disk_usage()[0])
                position, seen = _apply(spool, mark, position)
                bad += seen
        peak = max(peak, spool.disk_usage()[0])
        position, seen = _apply(spool, mark, position)
        seconds = time.perf_counter() - started
        size, segments = spool.disk_usage()
    finally:
        spool.close()
    ids = sum(p.stat().st_size for p in directory.glob("*.ids"))
    return {
        "events": events,
        "seconds": round(seconds, 1),
        "events_per_second": round(events / seconds),
        "single_file_bytes": single_file,
        "spool_bytes_end": size,
        "spool_bytes_peak": peak,
        "segments_end": segments,
        "id_lists_bytes": ids,
        "segment_bytes_limit": SEGMENT_BYTES,
        "bad_records": bad + seen,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--apply-every", type=int, default=500, help="events between ticks")
    parser.add_argument("--folder", type=Path, help="where to spool (default: a temp folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        result = measure(Path(folder) / "spool", args.events, args.apply_every)
    print(json.dumps(result, indent=2))
    print(f"# {os.uname().sysname}, fsync per event, segment {SEGMENT_BYTES} bytes")


if __name__ == "__main__":
    main()
