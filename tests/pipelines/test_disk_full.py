"""How a full disk is recognised however it is wrapped, and what dlt's logger shows of it
(the end-to-end behaviour on a real full tmpfs: test_disk_full_e2e.py)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator

import pytest

from drone_ops_sync.pipelines.console.logs import setup_logging
from drone_ops_sync.pipelines.run.errors import full_path, is_disk_full, root_cause


def moved_by_copy(target: str) -> OSError:
    """What dlt's move raises when the rename fails across file systems and the copy it falls
    back to meets a full disk: ENOSPC, with EXDEV as its context."""
    try:
        try:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        except OSError:
            raise OSError(errno.ENOSPC, "No space left on device", target)  # noqa: B904
    except OSError as exc:
        return exc


def test_a_full_disk_behind_a_cross_device_link_is_still_a_full_disk() -> None:
    wrapped = RuntimeError("load failed")
    wrapped.__cause__ = moved_by_copy("/srv/wh/.dlt_pipelines/p/load/new/job.parquet")
    assert "[Errno 18]" in root_cause(wrapped)  # what the run used to say
    assert is_disk_full(wrapped)
    assert full_path(wrapped) == "/srv/wh/.dlt_pipelines/p/load/new/job.parquet"


def test_duckdbs_commit_error_names_the_file_it_could_not_write() -> None:
    error = RuntimeError(
        'TransactionContext Error: Failed to commit: Could not write file "/srv/wh/w.duckdb.wal":'
        " No space left on device"
    )
    assert is_disk_full(error)
    assert full_path(error) == "/srv/wh/w.duckdb.wal"


def test_other_errors_are_not_a_full_disk() -> None:
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied", "/srv/wh"))
    assert not is_disk_full(RuntimeError("Could not set lock on file"))


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The root and dlt loggers as they were, after a test that called `setup_logging`."""
    root, dlt_logger = logging.getLogger(), logging.getLogger("dlt")
    saved = (list(root.handlers), root.level, list(dlt_logger.filters), dlt_logger.propagate)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    dlt_logger.filters[:] = saved[2]
    dlt_logger.propagate = saved[3]


def test_dlts_records_show_no_traceback_and_none_for_a_full_disk(
    restored_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging(False)  # here, so that its handler writes to the captured stderr
    dlt_logger = logging.getLogger("dlt")
    try:
        raise moved_by_copy("/srv/wh/.dlt_pipelines/p/trace.pickle")
    except OSError:
        dlt_logger.warning("Failed to create trace dump via pickle", exc_info=True)
    try:
        raise ValueError("a job's file is damaged")
    except ValueError:
        dlt_logger.error("Transient exception in job", exc_info=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, "\n".join(lines)
    assert lines[0].endswith("Transient exception in job: ValueError: a job's file is damaged")
