"""Log lines to stderr as text, or to stdout as JSON lines beside the output's events; every
line goes through `redact`, so a secret that slipped into some library's message never leaves
the process. dlt's own logger is routed through the same handlers."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from drone_ops_sync.sources.drone_ops.internal import redact

from ..run.errors import is_disk_full, root_cause

# dlt warnings about choices we made on purpose: our JSON columns are declared `json` while
# Arrow carries them as text; PostgreSQL loads by INSERT from Arrow (see Target.loader_file_format)
_BENIGN_DLT_WARNINGS = (
    "when merging arrow schema with dlt schema",
    "A ArrowToInsertValuesWriter writer is used",
)


class _BenignDltWarnings(logging.Filter):
    """Hides dlt warnings that fire on every run about what we intend."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(benign in message for benign in _BENIGN_DLT_WARNINGS)


class _ThroughOurHandlers(_BenignDltWarnings):
    """Sends dlt's records to the root logger's handlers (ours: redacting, text or JSON),
    never to dlt's own, which dlt re-adds whenever it re-initialises its runtime: a filter on
    the logger runs before any handler, so it holds. Without `-v` a record carries no
    traceback, and one caused by a full disk is not shown: the run says so in one line."""

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if super().filter(record):
            shown = record if self.verbose else _without_traceback(record)
            for handler in logging.getLogger().handlers:
                if shown is not None and shown.levelno >= handler.level:
                    handler.handle(shown)
        return False


def _without_traceback(record: logging.LogRecord) -> logging.LogRecord | None:
    """The record as one line (its error's cause appended), or None for a full disk's."""
    error = record.exc_info[1] if record.exc_info else None
    if error is None:
        return record
    if is_disk_full(error):
        return None
    line = logging.makeLogRecord(record.__dict__)
    line.msg, line.args = f"{record.getMessage()}: {root_cause(error)}", None
    line.exc_info, line.exc_text = None, None
    return line


class _Redacting(logging.Formatter):
    """Formats as usual, then removes any registered secret from the whole line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = {
            "event": "log",
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        if record.exc_info:
            event["error"] = redact(repr(record.exc_info[1]))
        return json.dumps(event, default=str)


def setup_logging(verbose: bool, *, json_lines: bool = False) -> None:
    """Logs to stderr as text, or to stdout as JSON lines beside the events."""
    handler = logging.StreamHandler(sys.stdout if json_lines else sys.stderr)
    handler.setFormatter(
        _JsonLines()
        if json_lines
        else _Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler.addFilter(_BenignDltWarnings())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    # dlt configures its own logger from runtime.log_level; route it through ours
    dlt_logger = logging.getLogger("dlt")
    dlt_logger.handlers.clear()
    dlt_logger.propagate = False
    for existing_filter in list(dlt_logger.filters):
        dlt_logger.removeFilter(existing_filter)
    dlt_logger.addFilter(_ThroughOurHandlers(verbose))
    if not verbose:
        logging.getLogger("httpx").setLevel(logging.WARNING)
