"""Loaded by every Python process whose PYTHONPATH starts with this folder (see
tests/pipelines/test_unattended.py): logs and refuses any network connection that does not
stay on this machine's loopback interface.

Active only when DRONE_SYNC_NETGUARD_LOG names a file; each refused attempt appends one line
`<what> <host> <port>` to it. Wraps name resolution (socket.getaddrinfo, which
socket.create_connection, httpx/httpcore, urllib3/requests and asyncio all go through) and
socket.socket.connect / connect_ex (for connects by address or by name that skip it).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

LOG_ENV = "DRONE_SYNC_NETGUARD_LOG"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def _is_loopback(host: Any) -> bool:
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard, used to bind
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).strip().strip("[]").lower()
    if name in LOOPBACK_NAMES or name in ("", "0.0.0.0", "::"):
        return True
    name = name.split("%", 1)[0]
    if name.startswith("::ffff:"):
        name = name[len("::ffff:") :]
    return name == "::1" or name.startswith("127.")


def _install(log_path: str) -> None:
    lock = threading.Lock()

    def refuse(what: str, host: Any, port: Any) -> None:
        with lock, open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{what} {host!r} {port!r} pid={os.getpid()}\n")

    original_getaddrinfo = socket.getaddrinfo
    original_create_connection = socket.create_connection
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            refuse("getaddrinfo", host, port)
            raise socket.gaierror(socket.EAI_NONAME, f"netguard: {host!r} is not loopback")
        return original_getaddrinfo(host, port, *args, **kwargs)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        host, port = address[0], address[1]
        if not _is_loopback(host):
            refuse("create_connection", host, port)
            raise ConnectionRefusedError(f"netguard: {host!r} is not loopback")
        return original_create_connection(address, *args, **kwargs)

    def _check(sock: socket.socket, what: str, address: Any) -> bool:
        inet = sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple)
        if inet and not _is_loopback(address[0]):
            refuse(what, address[0], address[1] if len(address) > 1 else None)
            return False
        return True

    def connect(self: socket.socket, address: Any) -> None:
        if not _check(self, "connect", address):
            raise ConnectionRefusedError(f"netguard: {address!r} is not loopback")
        original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _check(self, "connect_ex", address):
            return 111  # ECONNREFUSED
        return original_connect_ex(self, address)

    setattr(socket, "getaddrinfo", getaddrinfo)  # noqa: B010
    setattr(socket, "create_connection", create_connection)  # noqa: B010
    setattr(socket.socket, "connect", connect)  # noqa: B010
    setattr(socket.socket, "connect_ex", connect_ex)  # noqa: B010


_log_path = os.environ.get(LOG_ENV)
if _log_path:
    _install(_log_path)
