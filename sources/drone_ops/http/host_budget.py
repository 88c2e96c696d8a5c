"""One API host's request budget, shared by every process on this machine that calls it.

Why a file: a fleet's workspaces often live on one API host (a platform's customers, one
Drone Operations deployment), and they are synced by several processes at once (the fleet's
workers, Dagster's runs). A limit kept in memory would give each process the whole budget.
Each request reserves the next start time in the host's file under an exclusive `flock`
(a generic cell rate algorithm: one slot every `1 / rate` seconds, no burst), then sleeps
until its slot. Reservations are taken in the order processes reach the lock, the file is
a few bytes, and a lock held by a killed process is released by the kernel.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import dlt

from .. import file_lock
from ..exceptions import ConfigError, Interrupted

SETTING = "sources.drone_ops.max_requests_per_second_per_host"
STALE_SECONDS = 60.0
"""A reservation further ahead than this was written before a clock change or by another
boot: it is ignored rather than obeyed."""


class HostBudget:
    """At most `rate` requests per second to the host of `base_url`, across processes."""

    def __init__(self, base_url: str, rate: float, folder: Path | None = None) -> None:
        parts = urlsplit(base_url)
        self.host = f"{parts.scheme}://{parts.netloc}"
        self.interval = 1.0 / rate
        # in dlt's data folder, which every process of one user (the fleet's workers,
        # Dagster's runs, a plain dlt pipeline) shares on this machine
        folder = folder or Path(dlt.current.run_context().data_dir) / "drone_ops_sync" / "hosts"
        name = hashlib.sha256(self.host.encode()).hexdigest()[:32]
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fd = os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ConfigError(
                SETTING, f"its shared state cannot be kept in {folder}: {exc.strerror}"
            ) from None
        self._local = threading.Lock()

    def wait(self, cancel: threading.Event) -> None:
        """Reserves the host's next slot and waits for it; raises `Interrupted` when `cancel`
        is set meanwhile (the slot is then lost, which only slows the others by one)."""
        with self._local:
            file_lock.lock(self._fd)
            try:
                now = time.time()
                text = os.pread(self._fd, 32, 0).strip()
                booked = float(text) if text else 0.0
                start = now if booked > now + STALE_SECONDS else max(booked, now)
                os.pwrite(self._fd, f"{start + self.interval:<32.6f}".encode(), 0)
            finally:
                file_lock.unlock(self._fd)
        delay = start - now
        if delay > 0 and cancel.wait(delay):
            raise Interrupted("the request")

    def close(self) -> None:
        os.close(self._fd)
