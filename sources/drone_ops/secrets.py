"""The process's record of secret values, so any text can be scrubbed before it leaves.

The key is kept out of messages by construction (no message formats it), but text we do not
write can still carry it: an HTTP library's error that quotes a header, a traceback, a dlt
exception. Everything that leaves the process as text (log records, `_sync_runs.error`, the
CLI's output) goes through `redact`, so a key that slipped into such text is replaced there.
"""

from __future__ import annotations

import threading

REDACTED = "<redacted>"
# shorter values would redact ordinary words; a real key is far longer
_MIN_LENGTH = 6
_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Remembers a secret (and its whitespace-stripped and repr forms) for `redact`."""
    forms = {value, value.strip(), repr(value)[1:-1], repr(value.strip())[1:-1]}
    with _lock:
        _secrets.update(form for form in forms if len(form) >= _MIN_LENGTH)


def redact(text: str) -> str:
    """`text` with every registered secret replaced, longest first (replaced whole)."""
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
