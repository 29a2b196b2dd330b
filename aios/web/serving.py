"""``ServerThread``: Werkzeug's threaded server on 127.0.0.1 (flask-sock needs Werkzeug).

Requests are served by :class:`aios_sdk._keepalive.KeepAliveHandler`: a client that keeps
its connection (the desktop page, ``requests`` sessions, MCP clients) sends its next
request on it to the same server thread, instead of a new connection and a new thread per
request as Werkzeug's own handler does (issue 27 item 5). WebSocket upgrades, chunked
bodies and clients that ask to close are Werkzeug's as before. At shutdown the kept
connections are closed, so no request reaches a stopped system through one.

Two things Werkzeug leaves to us (DESIGN §11):

- a slow client would hold a thread for ever with a half-sent request: every
  connection gets a socket timeout (``web.request_timeout``) for reading its
  request, lifted only once a WebSocket is upgraded (an idle event stream is
  normal);
- its access log would write the launch token of ``/?token=…`` (and the
  events socket's ``?token=``) to the log: :class:`RedactToken` replaces it.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

from aios.config import WebConfig
from aios_sdk._keepalive import KeepAliveHandler

HOST = "127.0.0.1"
POLL_INTERVAL = 0.2
"""Seconds between two checks for shutdown while serving."""
REDACTED = "***"
_SECRET_PARAM = re.compile(r"([?&](?:token|sig)=)[^&\s\"']+")


def redact(text: str) -> str:
    """``text`` with the values of ``token=`` and ``sig=`` query parameters masked."""
    return _SECRET_PARAM.sub(rf"\g<1>{REDACTED}", text)


class RedactToken(logging.Filter):
    """Masks secrets in query strings of the access log's lines (the ``werkzeug`` logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in args)
        return True


_redactor = RedactToken()


def install_log_redaction() -> None:
    """Once per process: every line of Werkzeug's access log goes through RedactToken."""
    logger = logging.getLogger("werkzeug")
    if _redactor not in logger.filters:
        logger.addFilter(_redactor)


class _Handler(KeepAliveHandler):
    """Kept-alive requests with a read timeout, each connection known to its server."""

    # socketserver's StreamRequestHandler applies ``timeout`` to the connection in setup()
    connections: ClassVar[set[socket.socket]]
    lock: ClassVar[threading.Lock]

    def setup(self) -> None:
        super().setup()
        with self.lock:
            self.connections.add(self.connection)

    def finish(self) -> None:
        with self.lock:
            self.connections.discard(self.connection)
        super().finish()


def _handler_class(timeout: float) -> type[_Handler]:
    """A handler class of one server's own: its timeout and the set of its open connections."""
    attrs = {"timeout": timeout, "connections": set(), "lock": threading.Lock()}
    return type("TimedRequestHandler", (_Handler,), attrs)


class ServerThread(threading.Thread):
    """The HTTP server in a daemon thread.

    The socket is bound first (port 0 = any free port), so the System can be
    built knowing its real port; the Flask app is attached afterwards.
    """

    def __init__(self, port: int = 0, request_timeout: float | None = None):
        super().__init__(name="aios-http", daemon=True)
        install_log_redaction()
        self._app: Flask | None = None
        timeout = WebConfig().request_timeout if request_timeout is None else request_timeout
        self._handler = _handler_class(timeout)
        self.server: BaseWSGIServer = make_server(
            HOST, port, self._dispatch, threaded=True, request_handler=self._handler
        )
        self.port = self.server.server_port
        self._v6_guard = _reserve_v6_loopback(self.port)

    def _dispatch(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self._app is None:
            start_response("503 Service Unavailable", [("Content-Type", "application/json")])
            return [b'{"error": "the system is starting"}']
        sock = environ.get("werkzeug.socket")
        if sock is not None and environ.get("HTTP_UPGRADE", "").lower() == "websocket":
            sock.settimeout(None)  # the request is read; an event stream may idle
        result: Iterable[bytes] = self._app(environ, start_response)
        return result

    def attach(self, app: Flask) -> None:
        self._app = app

    def run(self) -> None:
        self.server.serve_forever(poll_interval=POLL_INTERVAL)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self._handler.lock:
            kept = list(self._handler.connections)
        for conn in kept:  # idle kept-alive connections (and open event streams) end now
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._v6_guard is not None:
            self._v6_guard.close()


def _reserve_v6_loopback(port: int) -> socket.socket | None:
    """Bind (not listen on) ``[::1]:port``, so no one else can serve the desktop's port there.

    A browser may resolve ``localhost`` to ``::1``; an app granted the host's
    network could otherwise listen on ``[::1]:<desktop port>`` and answer in
    the desktop's place. Bound without ``listen``, a connection is refused.
    None where the machine has no IPv6 loopback.
    """
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind(("::1", port))
    except OSError:
        s.close()
        return None
    return s
