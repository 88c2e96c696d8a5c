"""An httpx transport over urllib3's connection pools, measured by `python -m bench http`.

Why it exists: httpx's own transport (httpcore + h11) costs about twice urllib3's CPU per
request here, and the sync keeps httpx as its client interface, so a cheaper engine could only
come in behind `httpx.BaseTransport`. This is that engine, written for the measurement: the
sync does not use it (docs/performance.md has the figures and the decision). It maps urllib3's
failures onto the httpx exceptions the client already retries, so `DroneOpsClient` runs on it
unchanged.
"""

from __future__ import annotations

import httpx
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import (
    HTTPError as Urllib3Error,
)


class Urllib3Transport(httpx.BaseTransport):
    """One urllib3 pool per origin; each body is read whole by urllib3 (no httpx stream)."""

    def __init__(self, pool_size: int = 40, connect: float = 10.0, read: float = 30.0) -> None:
        self._pools: dict[tuple[str, str, int | None], urllib3.HTTPConnectionPool] = {}
        self._size = pool_size
        self._timeout = urllib3.Timeout(connect=connect, read=read)

    def _pool(self, url: httpx.URL) -> urllib3.HTTPConnectionPool:
        key = (url.scheme, url.host, url.port)
        pool = self._pools.get(key)
        if pool is None:
            kind = (
                urllib3.HTTPSConnectionPool if url.scheme == "https" else urllib3.HTTPConnectionPool
            )
            made = kind(url.host, url.port, maxsize=self._size, block=False, timeout=self._timeout)
            pool = self._pools.setdefault(key, made)
        return pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw}
        try:
            response = self._pool(url).urlopen(
                request.method,
                url.raw_path.decode("ascii"),
                body=request.content or None,
                headers=headers,
                retries=False,
                redirect=False,
                decode_content=False,
                assert_same_host=False,
            )
        except ConnectTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc)) from None
        except NewConnectionError as exc:
            raise httpx.ConnectError(str(exc)) from None
        except ReadTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc)) from None
        except (ProtocolError, Urllib3Error, OSError) as exc:
            raise httpx.RemoteProtocolError(str(exc)) from None
        return httpx.Response(
            response.status, headers=list(response.headers.items()), content=response.data
        )

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
