"""Keep-alive HTTP/1.1 connections to one peer, on the request path both ways.

The system calls an app (``/handle``, once per round) and an app calls the
system (``/api/sys/tool`` mid-request) many times a second: each call is a
small JSON POST over loopback or a Unix socket, to a peer that speaks
HTTP/1.1. ``requests`` spends more on a call like this than the call costs
(preparing, merging settings, cookie jars, hooks), so both ends use this pool
of :class:`http.client.HTTPConnection` instead: one per peer, a few idle
connections kept, thread-safe.

A kept connection is used again only while it is sound: one the peer closed
(it restarted, or dropped an idle connection) or left with unread bytes is
thrown away before the request is written, never after; a request whose write
fails on a kept connection is sent once more on a new one (the peer read
none of it). A reply is read whole (or up to ``limit`` bytes, then the
connection is closed) before the connection goes back.

Errors are :class:`PeerTimeout` (no answer within the time given) and
:class:`PeerUnreachable` (no connection, or it broke); callers map them to theirs.
"""

from __future__ import annotations

import http.client
import math
import os
import select
import socket
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aios_sdk._unix import connect_unix

IDLE_KEPT = 16
"""Idle connections kept per peer (the system calls one app from many threads)."""


class PeerTimeout(OSError):
    """The peer did not accept, answer or finish its answer in time."""


class PeerUnreachable(OSError):
    """No connection to the peer, or it broke before a whole answer came."""


@dataclass(frozen=True)
class Reply:
    """A peer's answer: its status, headers and body (None when longer than the limit)."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes | None

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


Wait = Callable[[socket.socket], None]
"""Blocks until the request's answer starts to arrive on the socket (raising
PeerTimeout, or the caller's own error, when it should not wait any more)."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, host: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._socket_path = socket_path

    def connect(self) -> None:
        self.sock = connect_unix(self._socket_path, self.timeout)


def readable(sock: socket.socket, timeout: float) -> bool:
    """Whether ``sock`` has bytes (or an end of stream) to read within ``timeout`` seconds."""
    if not hasattr(select, "poll"):  # Windows: select() has no descriptor limit there
        return bool(select.select([sock], [], [], max(0.0, timeout))[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(0, math.ceil(timeout * 1000))))


def _sound(conn: http.client.HTTPConnection) -> bool:
    """A kept connection may carry a new request: open, and nothing unasked waiting on it
    (bytes there now are the peer's close, or garbage no request of ours asked for)."""
    sock = conn.sock
    return sock is not None and sock.fileno() >= 0 and not readable(sock, 0)


class Connections:
    """Keep-alive connections to one peer: ``host:port`` over TCP, or a Unix socket that
    serves it (the ``Host`` header still says ``host:port``)."""

    def __init__(self, host: str, port: int, socket_path: str | None = None) -> None:
        self.host, self.port, self.socket_path = host, port, socket_path
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()
        # a pool dropped without close() (a client made for one call) closes what it kept
        weakref.finalize(self, _close_all, self._idle)

    def _new(self, timeout: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self.socket_path is not None:
            conn = _UnixConnection(self.socket_path, self.host, self.port, timeout)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.connect()
        except TimeoutError as e:
            raise PeerTimeout(f"no connection within {timeout:g} s") from e
        except OSError as e:
            conn.close()
            raise PeerUnreachable(f"cannot connect: {e.strerror or e}") from e
        return conn

    def _kept(self) -> http.client.HTTPConnection | None:
        while True:
            with self._lock:
                if self._pid != os.getpid():  # a forked child: those are its parent's
                    self._idle.clear()
                    self._pid = os.getpid()
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if _sound(conn):
                return conn
            conn.close()

    def _put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_KEPT:
                self._idle.append(conn)
                return
        conn.close()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Mapping[str, str],
        *,
        connect_timeout: float,
        read_timeout: float,
        limit: int | None = None,
        wait: Wait | None = None,
    ) -> Reply:
        """Send one request and read its whole answer.

        ``read_timeout``: seconds for each read of the answer; ``wait``, when given,
        decides how long to wait for its first byte instead. ``limit``: bytes of body
        read at most (a longer body gives ``Reply.body`` None and closes the connection).
        """
        conn = self._send(method, path, body, headers, connect_timeout)
        try:
            sock = conn.sock
            assert sock is not None
            if wait is not None:
                wait(sock)
            sock.settimeout(read_timeout)
            resp = conn.getresponse()
            content = _read(resp, limit)
        except TimeoutError as e:
            conn.close()
            raise PeerTimeout(f"no whole answer within {read_timeout:g} s") from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            if isinstance(e, PeerTimeout | PeerUnreachable):
                raise
            raise PeerUnreachable(f"the connection broke: {type(e).__name__}: {e}") from e
        except BaseException:
            conn.close()
            raise
        if content is None or resp.will_close:
            conn.close()
        else:
            self._put(conn)
        return Reply(resp.status, resp.headers, content)

    def _send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Mapping[str, str],
        connect_timeout: float,
    ) -> http.client.HTTPConnection:
        """The connection ``method path`` went out on (a kept one when one is sound)."""
        conn = self._kept()
        fresh = conn is None
        for _ in range(2):
            if conn is None:
                conn, fresh = self._new(connect_timeout), True
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(connect_timeout)
                conn.request(method, path, body=body, headers=dict(headers))
                return conn
            except TimeoutError as e:
                conn.close()
                raise PeerTimeout(f"could not send the request within {connect_timeout:g} s") from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if fresh:
                    raise PeerUnreachable(f"could not send the request: {e}") from e
                conn = None  # a kept connection the peer had closed: once more on a new one
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the idle connections; those in use close when their call ends."""
        with self._lock:
            self._closed = True
            idle = list(self._idle)
            self._idle.clear()
        _close_all(idle)


def _close_all(conns: list[http.client.HTTPConnection]) -> None:
    for conn in conns:
        conn.close()


def _read(resp: http.client.HTTPResponse, limit: int | None) -> bytes | None:
    if limit is None:
        return resp.read()
    length = resp.length
    if length is not None and length > limit:
        return None
    data = resp.read(limit + 1) if length is None else resp.read()
    if len(data) > limit:
        return None
    if length is None and not resp.isclosed():
        rest = resp.read()  # an answer of exactly ``limit`` bytes ends here
        if rest:
            return None
    return data
