"""Replacing a file written whole so that a reader sees the old text or the new, never half
of one, even across a power cut: the one way the spool's marks, the metrics textfile, the model
build record and the dashboard page are written."""

from __future__ import annotations

import os
from pathlib import Path


def replace_durably(path: Path, text: str) -> None:
    """Writes `text` to a temporary file beside `path` (named by the process, so two writers
    never share one), fsyncs it and renames it over `path`. A failure leaves `path` as it was
    and no temporary file behind. Raises OSError."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
