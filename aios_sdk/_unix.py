"""HTTP over a Unix socket, for the channel between the system and a confined app.

A confined app (DESIGN §11) has no TCP port the host can reach: the system
and the app talk over Unix sockets in the app's runtime directory. URLs stay
``http://127.0.0.1:PORT/...`` everywhere (so ``Host`` headers, logs and the
spec's raw apps are unchanged); a :class:`UnixAdapter` mounted on a
``requests.Session`` sends a request to the socket its ``resolve(host,
port)`` names, or over TCP as usual when it names none.

:class:`UnixHTTPConnection` is the same for :mod:`http.client` (the
system's liveness probe). Both the system (calling apps) and the SDK
(calling the system from inside the sandbox) use this module, which needs
nothing but the standard library, urllib3 and requests.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import ConnectionPool, HTTPConnectionPool
from urllib3.exceptions import NewConnectionError

Resolve = Callable[[str, int], "str | None"]
"""``(host, port)`` of a URL -> the Unix socket serving it, or None for plain TCP."""

POOL_SIZE = 16
"""Keep-alive connections kept per socket (the system calls one app from many threads)."""


def connect_unix(path: str, timeout: float | None) -> socket.socket:
    """A stream socket connected to ``path`` (OSError when nobody listens there)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


class _UnixConnection(HTTPConnection):
    """urllib3's connection, connected to a Unix socket instead of ``host:port``."""

    def __init__(self, *args: Any, socket_path: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._socket_path = socket_path

    def _new_conn(self) -> socket.socket:
        timeout = self.timeout if isinstance(self.timeout, int | float) else None
        try:
            return connect_unix(self._socket_path, timeout)
        except OSError as e:
            raise NewConnectionError(
                self, f"cannot connect to {self._socket_path}: {e.strerror or e}"
            ) from e


class _UnixPool(HTTPConnectionPool):
    ConnectionCls = _UnixConnection

    def __init__(self, host: str, port: int, socket_path: str, **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self.conn_kw["socket_path"] = socket_path


class UnixAdapter(HTTPAdapter):
    """Sends ``http://host:port`` requests to the Unix socket ``resolve`` names."""

    def __init__(self, resolve: Resolve, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._resolve = resolve
        self._pools: dict[tuple[str, str, int], _UnixPool] = {}
        self._pools_lock = threading.Lock()

    def _unix_pool(self, url: str) -> _UnixPool | None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            return None
        port = parts.port or 80
        path = self._resolve(parts.hostname, port)
        if path is None:
            return None
        key = (path, parts.hostname, port)
        with self._pools_lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = _UnixPool(
                    parts.hostname, port, path, maxsize=POOL_SIZE, block=False
                )
            return pool

    def get_connection_with_tls_context(
        self,
        request: PreparedRequest,
        verify: bool | str | None,
        proxies: Mapping[str, str] | None = None,
        cert: Any = None,
    ) -> ConnectionPool:
        pool = self._unix_pool(request.url or "")
        if pool is not None:
            return pool
        return super().get_connection_with_tls_context(request, verify, proxies, cert)

    def close(self) -> None:
        with self._pools_lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()
        super().close()


class UnixHTTPConnection(http.client.HTTPConnection):
    """:class:`http.client.HTTPConnection` to a Unix socket (``Host`` still ``host:port``)."""

    def __init__(self, socket_path: str, host: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._socket_path = socket_path

    def connect(self) -> None:
        self.sock = connect_unix(self._socket_path, self.timeout)
