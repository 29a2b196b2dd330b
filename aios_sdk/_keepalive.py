"""A Werkzeug request handler that keeps HTTP/1.1 connections open between requests.

Werkzeug's development server closes every connection after one response
(``Connection: close``): it cannot tell where a request's body ends, so it
drains the socket after the app has answered. The request path between the
system and its apps (DESIGN §9; issue 27 item 4) is many small JSON POSTs on
the same peer, each of which then paid a new connection and a new server
thread. :class:`KeepAliveHandler` serves a request whose body has a
``Content-Length`` itself: the app reads the body through a stream limited to
that length, whatever it leaves unread is skipped, and the answer goes out with
its length (or chunked, as it streams), so the next request can follow on the
same connection, served by the same thread. Anything else (a chunked body, a
WebSocket upgrade, a client that asked to close) goes to Werkzeug as before.

Used by an SDK app's server (:meth:`aios_sdk.agent.AIOSAgent.run`) and by the
system's channel to a confined app (:class:`aios.apphost.confinement.Channel`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler
from werkzeug.wsgi import LimitedStream

log = logging.getLogger(__name__)

NO_BODY = frozenset({204, 304})
SKIP_MAX = 1 << 20
"""Bytes of a request body the app left unread that are read and dropped to keep the
connection; more, and the connection closes instead."""


class KeepAliveHandler(WSGIRequestHandler):
    """HTTP/1.1 with connections kept alive (see the module docstring)."""

    protocol_version = "HTTP/1.1"
    served = 0
    """Requests this connection has carried."""

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        # a kept connection that waits past the timeout for its next request simply ends
        if self.served and format.startswith("Request timed out"):
            return
        super().log_error(format, *args)

    def run_wsgi(self) -> None:
        self.served += 1
        length = self.headers.get("Content-Length")
        if (
            self.close_connection
            or self.headers.get("Transfer-Encoding")
            or self.headers.get("Upgrade")
            or self.headers.get("Expect")
            or (length is not None and not length.strip().isdecimal())
        ):
            self.close_connection = True
            super().run_wsgi()  # Werkzeug's way: one request, then the connection closes
            return
        environ = self.make_environ()
        body = LimitedStream(self.rfile, int(length or 0))  # type: ignore[arg-type]
        environ["wsgi.input"] = body
        environ["wsgi.input_terminated"] = True
        self.environ = environ
        try:
            self._answer(environ)
        except (ConnectionError, TimeoutError) as e:
            self.close_connection = True
            self.connection_dropped(e, environ)
            return
        if int(length or 0) - body.tell() > SKIP_MAX:
            self.close_connection = True  # a large body left unread: closing costs less
            return
        body.exhaust()  # what the app left unread is not the next request

    def _answer(self, environ: dict[str, Any]) -> None:
        state: dict[str, Any] = {"sent": False, "chunked": False}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if exc_info and state["sent"]:
                raise exc_info[1].with_traceback(exc_info[2])
            state["status"], state["headers"] = status, headers
            return write

        def write(data: bytes) -> None:
            if not state["sent"]:
                state["sent"] = True
                self._head(state, environ, data)
            elif data:
                self._body(state, data)

        app = self.server.app
        try:
            result: Iterable[bytes] = app(environ, start_response)
        except Exception:  # noqa: BLE001 - the app's bug is this request's 500, as Werkzeug does
            log.exception("error on request %s %s", self.command, self.path)
            self.close_connection = True
            result = InternalServerError()(environ, start_response)
        try:
            for data in result:
                write(data)
            if not state["sent"]:
                write(b"")
            if state["chunked"]:
                self.wfile.write(b"0\r\n\r\n")
        except Exception:
            self.close_connection = True  # the answer is cut short: the client sees the close
            raise
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def _head(self, state: dict[str, Any], environ: dict[str, Any], first: bytes) -> None:
        """The status line and headers, with the first part of the body in one write (two
        small writes on TCP would wait for the peer's delayed ACK before the body went)."""
        code_text, _, message = state["status"].partition(" ")
        code = int(code_text)
        self.send_response(code, message)
        keys = set()
        for key, value in state["headers"]:
            if key.lower() not in ("connection", "transfer-encoding"):
                self.send_header(key, value)
                keys.add(key.lower())
        bodiless = environ["REQUEST_METHOD"] == "HEAD" or code in NO_BODY or 100 <= code < 200
        if "content-length" not in keys and not bodiless:
            state["chunked"] = True
            self.send_header("Transfer-Encoding", "chunked")
        if self.close_connection:
            self.send_header("Connection", "close")
        self._headers_buffer.append(b"\r\n" + self._framed(state, first))
        self.flush_headers()

    def _body(self, state: dict[str, Any], data: bytes) -> None:
        self.wfile.write(self._framed(state, data))

    @staticmethod
    def _framed(state: dict[str, Any], data: bytes) -> bytes:
        if not data or not state["chunked"]:
            return data
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"
