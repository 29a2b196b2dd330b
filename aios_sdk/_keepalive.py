"""A Werkzeug request handler that keeps HTTP/1.1 connections open between requests.

Werkzeug's development server closes every connection after one response
(``Connection: close``): it cannot tell where a request's body ends, so it
drains the socket after the app has answered. The request path between the
system and its apps (DESIGN §9; issue 27 item 4) is many small JSON POSTs on
the same peer, each of which then paid a new connection and a new server
thread. :class:`KeepAliveHandler` serves a request whose body has a
``Content-Length`` itself: the app reads the body through a stream limited to
that length, whatever it leaves unread is skipped, and the answer goes out with
its length (or chunked), so the next request can follow on the same
connection, served by the same thread. Anything else (a chunked body, a
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

NO_BODY_STATUS = frozenset({204, 304})


class KeepAliveHandler(WSGIRequestHandler):
    """HTTP/1.1 with connections kept alive (see the module docstring)."""

    protocol_version = "HTTP/1.1"

    def run_wsgi(self) -> None:
        length = self.headers.get("Content-Length")
        if (
            self.close_connection
            or self.headers.get("Transfer-Encoding")
            or self.headers.get("Upgrade")
            or self.headers.get("Expect")
            or (length is not None and not length.strip().isdigit())
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
        body.exhaust()  # what the app left unread is not the next request

    def _answer(self, environ: dict[str, Any]) -> None:
        got: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if exc_info and got.get("sent"):
                raise exc_info[1].with_traceback(exc_info[2])
            got["status"], got["headers"] = status, headers
            return lambda data: got.setdefault("written", []).append(data)

        try:
            app = self.server.app
            result: Iterable[bytes] = app(environ, start_response)
            try:
                chunks = [*got.pop("written", []), *result]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception:  # noqa: BLE001 - the app's bug is this request's 500, as Werkzeug does
            log.exception("error on request %s %s", self.command, self.path)
            self.close_connection = True
            got.clear()
            chunks = list(InternalServerError()(environ, start_response))
        self._send(got["status"], got["headers"], b"".join(chunks), environ)

    def _send(
        self, status: str, headers: list[tuple[str, str]], data: bytes, environ: dict[str, Any]
    ) -> None:
        code_text, _, message = status.partition(" ")
        code = int(code_text)
        self.send_response(code, message)
        for key, value in headers:
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        head = environ["REQUEST_METHOD"] == "HEAD"
        if code not in NO_BODY_STATUS and not 100 <= code < 200:
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        # headers and body in one write: two small writes on TCP would wait for the
        # peer's delayed ACK (Nagle) before the body goes out
        payload = data if data and not head and code not in NO_BODY_STATUS else b""
        self._headers_buffer.append(b"\r\n" + payload)
        self.flush_headers()
