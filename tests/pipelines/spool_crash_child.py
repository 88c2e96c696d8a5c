"""A process that spools and applies events the way `drone-sync listen` does, with small
segments, for test_spool_crash.py to kill -9 at any moment.

`python -m tests.pipelines.spool_crash_child SPOOL COMMITTED write N` appends events
`e00000`... in a thread, printing `acked <id>` after each fsync (the receiver's 202), while the
main thread applies: it reads from the applied mark, "loads" each batch by appending its ids
as one line to COMMITTED (one write plus fsync, standing for the warehouse's commit), saves
the mark, then removes the applied segments. `drain` only applies what is left, then prints
`duplicate <bool>` for a late retry of `e00000` and `segments <n>`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from drone_ops_sync.pipelines.listen.apply import AppliedMark
from drone_ops_sync.pipelines.listen.spool import Spool, read_from, segment_numbers

SEGMENT_BYTES = 4096
BATCH_BYTES = 3000


def _write(spool: Spool, count: int) -> None:
    for number in range(count):
        delivery_id = f"e{number:05d}"
        event = {"delivery_id": delivery_id, "event": "x", "data": {"pad": "p" * 150}}
        if spool.append(event, number, True):
            print(f"acked {delivery_id}", flush=True)


def _apply(spool: Spool, committed: Path, until_empty: bool) -> None:
    mark = AppliedMark(spool.directory)
    position = mark.load()
    spool.release(position.segment)
    while True:
        batch = read_from(spool.directory, position, BATCH_BYTES)
        if batch.end == position:
            if until_empty:
                return
            time.sleep(0.001)
            continue
        ids = [json.loads(line.data)["event"]["delivery_id"] for line in batch.lines]
        fd = os.open(committed, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(ids) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        mark.save(batch.end)
        position = batch.end
        spool.release(position.segment)


def main() -> None:
    directory, committed, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    spool = Spool(directory, segment_bytes=SEGMENT_BYTES)
    if mode == "write":
        writer = threading.Thread(target=_write, args=(spool, int(sys.argv[4])), daemon=True)
        writer.start()
        _apply(spool, committed, until_empty=False)
    else:
        _apply(spool, committed, until_empty=True)
        retry = {"delivery_id": "e00000", "event": "x", "data": {}}
        print(f"duplicate {not spool.append(retry, 0, True)}", flush=True)
        print(f"segments {len(segment_numbers(directory))}", flush=True)
    spool.close()


if __name__ == "__main__":
    main()
